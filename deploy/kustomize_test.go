package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// build renders a kustomization with the kubectl that hack/build-k8s.sh
// builds (its kustomize is the one users run with `kubectl apply -k`).
func build(t *testing.T, dir string) []unstructured.Unstructured {
	t.Helper()
	kubectl := filepath.Join("..", "_output", "k8s", "bin", "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("kubectl missing: run `make k8s` (%v)", err)
	}
	out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, out)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decode %s: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

func find(t *testing.T, objs []unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("%s %s not in the build", kind, name)
}

// secretsOf lists the Secrets a pod template mounts.
func secretsOf(p corev1.PodSpec) []string {
	var s []string
	for _, v := range p.Volumes {
		if v.Secret != nil {
			s = append(s, v.Secret.SecretName)
		}
	}
	return s
}

// TestInstallKeepsPrivilegeApart checks, on what `kubectl apply -k` would
// send, the promises the README's security model makes: the private key
// only in the webhook, the public key only in the agent, a webhook without
// any privilege, an agent with exactly the capabilities it documents, and
// cert-manager wired to the webhook configuration.
func TestInstallKeepsPrivilegeApart(t *testing.T) {
	for _, dir := range []string{".", "overlays/local"} {
		t.Run(dir, func(t *testing.T) {
			objs := build(t, dir)
			for _, o := range objs {
				if o.GetNamespace() != "" && o.GetNamespace() != "podnet-system" {
					t.Errorf("%s %s in namespace %q, want podnet-system", o.GetKind(), o.GetName(), o.GetNamespace())
				}
			}
			var agent appsv1.DaemonSet
			var webhook appsv1.Deployment
			find(t, objs, "Deployment", "podnet-webhook", &webhook)
			find(t, objs, "DaemonSet", "podnet-agent", &agent)

			if got := secretsOf(webhook.Spec.Template.Spec); !slices.Contains(got, "podnet-approval-key") || slices.Contains(got, "podnet-approval-pub") {
				t.Errorf("webhook mounts secrets %v: want the private key and not the public one", got)
			}
			if got := secretsOf(agent.Spec.Template.Spec); slices.Contains(got, "podnet-approval-key") || !slices.Contains(got, "podnet-approval-pub") {
				t.Errorf("agent mounts secrets %v: want the public key only", got)
			}

			ws := webhook.Spec.Template.Spec
			c := ws.Containers[0].SecurityContext
			switch {
			case ws.HostNetwork || ws.HostPID:
				t.Error("webhook uses host namespaces")
			case ws.SecurityContext == nil || ws.SecurityContext.RunAsNonRoot == nil || !*ws.SecurityContext.RunAsNonRoot:
				t.Error("webhook may run as root")
			case c == nil || c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem:
				t.Error("webhook root filesystem is writable")
			case c.Capabilities == nil || !slices.Equal(c.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(c.Capabilities.Add) != 0:
				t.Errorf("webhook capabilities %+v: want all dropped, none added", c.Capabilities)
			case c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation:
				t.Error("webhook may escalate privileges")
			}
			if webhook.Spec.Replicas == nil || *webhook.Spec.Replicas < 2 {
				t.Errorf("webhook replicas %v, want 2", webhook.Spec.Replicas)
			}
			var pdb unstructured.Unstructured
			find(t, objs, "PodDisruptionBudget", "podnet-webhook", &pdb.Object)

			ac := agent.Spec.Template.Spec.Containers[0].SecurityContext
			switch {
			case ac == nil || ac.Privileged == nil || *ac.Privileged:
				t.Error("agent is privileged (or does not say it is not)")
			case ac.Capabilities == nil || !slices.Equal(ac.Capabilities.Drop, []corev1.Capability{"ALL"}):
				t.Errorf("agent does not drop all capabilities first: %+v", ac.Capabilities)
			case !slices.Equal(ac.Capabilities.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW", "SYS_ADMIN"}):
				t.Errorf("agent adds %v, want exactly NET_ADMIN, NET_RAW and SYS_ADMIN", ac.Capabilities.Add)
			case ac.AllowPrivilegeEscalation == nil || *ac.AllowPrivilegeEscalation:
				t.Error("agent may escalate privileges")
			}

			var mwc unstructured.Unstructured
			find(t, objs, "MutatingWebhookConfiguration", "podnet-webhook", &mwc.Object)
			if got := mwc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != "podnet-system/podnet-webhook" {
				t.Errorf("webhook configuration inject-ca-from %q, want podnet-system/podnet-webhook", got)
			}
			var cert unstructured.Unstructured
			find(t, objs, "Certificate", "podnet-webhook", &cert.Object)
			if s, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName"); s != "podnet-webhook-serving" || !slices.Contains(secretsOf(ws), s) {
				t.Errorf("serving certificate goes to %q, which the webhook does not mount (%v)", s, secretsOf(ws))
			}
		})
	}
}

// TestInstallIsReadyForLargeClusters checks what the README's Scale
// section promises of the manifests: a leader-elected controller with two
// replicas and no host access, every component's Go heap limit taken from
// its container's memory limit, agents that may roll a tenth of the nodes
// at once, and API Priority and Fairness levels for agents and controller.
func TestInstallIsReadyForLargeClusters(t *testing.T) {
	objs := build(t, ".")
	var ctrl, webhook appsv1.Deployment
	var agent appsv1.DaemonSet
	find(t, objs, "Deployment", "podnet-controller", &ctrl)
	find(t, objs, "Deployment", "podnet-webhook", &webhook)
	find(t, objs, "DaemonSet", "podnet-agent", &agent)
	if ctrl.Spec.Replicas == nil || *ctrl.Spec.Replicas != 2 {
		t.Errorf("controller replicas %v, want 2", ctrl.Spec.Replicas)
	}
	cs := ctrl.Spec.Template.Spec
	if cs.HostNetwork || cs.HostPID || len(cs.Volumes) != 0 || cs.ServiceAccountName != "podnet-controller" {
		t.Errorf("controller pod spec: hostNetwork %v, hostPID %v, volumes %v, service account %q", cs.HostNetwork, cs.HostPID, cs.Volumes, cs.ServiceAccountName)
	}
	if !slices.Contains(cs.Containers[0].Args, "--leader-elect=true") {
		t.Errorf("controller args %v lack --leader-elect=true", cs.Containers[0].Args)
	}
	for name, spec := range map[string]corev1.PodSpec{"controller": cs, "webhook": webhook.Spec.Template.Spec, "agent": agent.Spec.Template.Spec} {
		c := spec.Containers[0]
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" })
		if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.ResourceFieldRef == nil ||
			c.Env[i].ValueFrom.ResourceFieldRef.Resource != "limits.memory" || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: GOMEMLIMIT must come from the container's memory limit (env %v, limits %v)", name, c.Env, c.Resources.Limits)
		}
	}
	if ru := agent.Spec.UpdateStrategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.String() != "10%" {
		t.Errorf("agent rolling update %+v, want maxUnavailable 10%%", ru)
	}
	for _, name := range []string{"podnet-agent", "podnet-controller"} {
		var fs, plc unstructured.Unstructured
		find(t, objs, "FlowSchema", name, &fs.Object)
		find(t, objs, "PriorityLevelConfiguration", name, &plc.Object)
		if level, _, _ := unstructured.NestedString(fs.Object, "spec", "priorityLevelConfiguration", "name"); level != name {
			t.Errorf("FlowSchema %s uses level %q", name, level)
		}
	}
}
