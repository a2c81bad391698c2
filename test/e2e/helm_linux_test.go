package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/install"
)

// testHelmUpgrade upgrades the release with a debug log level and new
// agent resources, which restarts every agent: the running pods keep
// their interfaces and addresses, the approval keys stay the same, and a
// new pod gets its networks.
func (s *suite) testHelmUpgrade(t *testing.T) {
	ctx := context.Background()
	before := s.waitPodsWith(t, "web", 2, "net1")
	addrs := map[string][]string{}
	for _, p := range before {
		st, _ := statusOf(p)
		addrs[p.Name] = ipsOf(st, "net1")
	}
	keys := s.kubectl(t, "", "-n", "podnet-system", "get", "secret", "podnet-approval-key", "podnet-approval-pub", "-o", "jsonpath={.items[*].data}")
	var agentsBefore []string
	for _, a := range s.agentPods(t) {
		agentsBefore = append(agentsBefore, a.Name)
	}

	if err := s.in.HelmInstall(ctx, install.HelmRelease, "agent.extraArgs[0]=--zap-log-level=debug", "agent.resources.limits.memory=300Mi"); err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	agents := s.agentPods(t)
	for _, a := range agents {
		if slices.Contains(agentsBefore, a.Name) {
			t.Errorf("agent pod %s was not replaced by the upgrade", a.Name)
		}
		if !slices.Contains(a.Spec.Containers[0].Args, "--zap-log-level=debug") {
			t.Errorf("agent pod %s runs without the upgraded flag: %v", a.Name, a.Spec.Containers[0].Args)
		}
		if m := a.Spec.Containers[0].Resources.Limits.Memory().String(); m != "300Mi" {
			t.Errorf("agent pod %s: memory limit %s, want 300Mi", a.Name, m)
		}
	}
	if now := s.kubectl(t, "", "-n", "podnet-system", "get", "secret", "podnet-approval-key", "podnet-approval-pub", "-o", "jsonpath={.items[*].data}"); now != keys {
		t.Error("helm upgrade replaced the approval keys")
	}
	// The restarted agents verify the running pods' approvals again and
	// keep their interfaces: same pods, same addresses, net1 still up.
	after := s.waitPodsWith(t, "web", 2, "net1")
	for _, p := range after {
		want, ok := addrs[p.Name]
		if !ok {
			t.Errorf("pod %s is new: the upgrade replaced a running pod", p.Name)
			continue
		}
		st, _ := statusOf(p)
		if got := ipsOf(st, "net1"); !slices.Equal(got, want) {
			t.Errorf("pod %s: net1 addresses %v after the upgrade, %v before", p.Name, got, want)
		}
		out, err := s.exec(p.Name, "ip", "addr", "show", "net1")
		if err != nil {
			t.Fatal(err)
		}
		for _, ip := range want {
			if !strings.Contains(out, ip+"/") {
				t.Errorf("pod %s lost %s on net1 in the upgrade:\n%s", p.Name, ip, out)
			}
		}
	}
	s.kubectl(t, "", "-n", tenantNS, "scale", "deployment", "web", "--replicas=3")
	s.waitPodsWith(t, "web", 3, "net1")
}

// agentPods waits until every agent pod is Ready and returns them.
func (s *suite) agentPods(t *testing.T) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, 3*time.Minute, "Ready agent pods", func(ctx context.Context) error {
		var list corev1.PodList
		if err := s.client.List(ctx, &list, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-agent"}); err != nil {
			return err
		}
		pods = nil
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || !ready(p) {
				return fmt.Errorf("agent pod %s not Ready yet", p.Name)
			}
			pods = append(pods, p)
		}
		if len(pods) != len(s.cluster.Nodes) {
			return fmt.Errorf("%d agent pods on %d nodes", len(pods), len(s.cluster.Nodes))
		}
		return nil
	})
	return pods
}

// testHelmUninstall: `helm uninstall` with pods running first runs the
// uninstall step (the chart's pre-delete hook): the pods keep running
// without their podnet interfaces and the node keeps nothing of podnet.
// Then no object of the release is left in the API but the CRDs, which the
// chart keeps by default (crds.keep) so that uninstalling never deletes
// the admins' profiles.
func (s *suite) testHelmUninstall(t *testing.T) {
	ctx := context.Background()
	var running corev1.PodList
	if err := s.client.List(ctx, &running, client.InNamespace(tenantNS)); err != nil {
		t.Fatal(err)
	}
	running.Items = slices.DeleteFunc(running.Items, func(p corev1.Pod) bool {
		return p.Annotations[podnetv1.NetworksAnnotation] == "" || !ready(p)
	})
	if len(running.Items) == 0 {
		t.Fatal("no ready podnet pod before the uninstall: the checks after it would prove nothing")
	}
	manifest, err := s.in.HelmOutput(ctx, "get", "manifest", install.HelmRelease, "--namespace", "podnet-system")
	if err != nil {
		t.Fatal(err)
	}
	objs := strings.Fields(s.kubectl(t, manifest, "get", "-f", "-", "-o", "name"))
	var crds []string
	for _, o := range objs {
		if strings.HasPrefix(o, "customresourcedefinition") {
			crds = append(crds, o)
		}
	}
	wantCRDs := []string{"customresourcedefinition.apiextensions.k8s.io/ipclaims.podnet.io",
		"customresourcedefinition.apiextensions.k8s.io/macclaims.podnet.io",
		"customresourcedefinition.apiextensions.k8s.io/networkprofiles.podnet.io",
		"customresourcedefinition.apiextensions.k8s.io/nodepolicies.podnet.io"}
	if len(objs) < 20 || !slices.Equal(slices.Sorted(slices.Values(crds)), wantCRDs) {
		t.Fatalf("the release holds %d objects, %d of them CRDs: %v", len(objs), len(crds), objs)
	}
	if err := s.in.HelmRun(ctx, "uninstall", install.HelmRelease, "--namespace", "podnet-system", "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm uninstall: %v", err)
	}
	eventually(t, 2*time.Minute, "the release's objects gone but its CRDs", func(ctx context.Context) error {
		out, err := s.kubectlErr(manifest, "get", "-f", "-", "-o", "name", "--ignore-not-found")
		if err != nil {
			return err
		}
		if left := strings.Fields(out); !slices.Equal(left, crds) {
			return fmt.Errorf("left %v, want only the CRDs %v", left, crds)
		}
		return nil
	})
	if out, err := s.in.HelmOutput(ctx, "list", "--all-namespaces", "-q"); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("helm still lists releases: %q %v", out, err)
	}
	for _, p := range running.Items {
		s.checkPodKeptWithoutPodnet(t, p)
	}
	if err := nodeLeftovers(s.cluster); err != nil {
		t.Error(err)
	}
}
