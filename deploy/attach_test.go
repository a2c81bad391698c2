package deploy

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// workloads are the webhook's Deployment and the agent's DaemonSet as the
// kustomization dir renders them.
func workloads(t *testing.T, dir string) (webhook appsv1.Deployment, agent appsv1.DaemonSet) {
	t.Helper()
	objs := build(t, dir)
	find(t, objs, "Deployment", "podnet-webhook", &webhook)
	find(t, objs, "DaemonSet", "podnet-agent", &agent)
	return webhook, agent
}

// TestAttachAtSandboxSetupOverlay: the overlay turns the webhook's wait
// container off, makes the agent serve the plugin's socket, and installs
// the plugin from the agent image with an init container that is root for
// the node's CNI bin folder but holds no capability; the default install
// does none of it.
func TestAttachAtSandboxSetupOverlay(t *testing.T) {
	for dir, on := range map[string]bool{".": false, "overlays/attach-at-sandbox-setup": true} {
		t.Run(dir, func(t *testing.T) {
			webhook, agent := workloads(t, dir)
			if got := slices.Contains(webhook.Spec.Template.Spec.Containers[0].Args, "--hold-pods=attachAtSandboxSetup"); got != on {
				t.Errorf("webhook args %v: --hold-pods=attachAtSandboxSetup present = %v, want %v", webhook.Spec.Template.Spec.Containers[0].Args, got, on)
			}
			spec := agent.Spec.Template.Spec
			if got := slices.Contains(spec.Containers[0].Args, "--cni-socket=/run/podnet/cni.sock"); got != on {
				t.Errorf("agent args %v: --cni-socket present = %v, want %v", spec.Containers[0].Args, got, on)
			}
			if !on {
				if len(spec.InitContainers) != 0 {
					t.Errorf("default install: agent init containers %v, want none", spec.InitContainers)
				}
				return
			}
			if len(spec.InitContainers) != 1 {
				t.Fatalf("agent init containers %v, want install-cni", spec.InitContainers)
			}
			ic := spec.InitContainers[0]
			if ic.Image != spec.Containers[0].Image || !slices.Contains(ic.Command, "install-cni") {
				t.Errorf("install-cni runs %v from %q, want the agent's install-cni from its image %q", ic.Command, ic.Image, spec.Containers[0].Image)
			}
			sc := ic.SecurityContext
			if sc == nil || sc.Privileged == nil || *sc.Privileged || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
				t.Errorf("install-cni securityContext %+v, want unprivileged with every capability dropped", sc)
			}
			paths := map[string]string{}
			for _, v := range spec.Volumes {
				if v.HostPath != nil {
					paths[v.Name] = v.HostPath.Path
				}
			}
			if paths["cni-bin"] != "/opt/cni/bin" || paths["cni-socket"] != "/run/podnet" {
				t.Errorf("host paths %v, want cni-bin /opt/cni/bin and cni-socket /run/podnet", paths)
			}
		})
	}
}
