package deploy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHoldAutoOverlay: the overlay makes the webhook choose the hold per
// cluster (--hold-pods=auto) and the agent connect to the runtime's NRI
// socket, as hold-with-nri mounts it, so that it can probe the runtime's
// validator; the default install and the other overlays give no auto.
func TestHoldAutoOverlay(t *testing.T) {
	for dir, on := range map[string]bool{".": false, "overlays/hold-with-nri": false, "overlays/hold-auto": true} {
		t.Run(dir, func(t *testing.T) {
			webhook, agent := workloads(t, dir)
			wargs := webhook.Spec.Template.Spec.Containers[0].Args
			if got := slices.Contains(wargs, "--hold-pods=auto"); got != on {
				t.Errorf("webhook args %v: --hold-pods=auto present = %v, want %v", wargs, got, on)
			}
			if !on {
				return
			}
			spec := agent.Spec.Template.Spec
			if !slices.Contains(spec.Containers[0].Args, "--nri-socket=/var/run/nri/nri.sock") {
				t.Errorf("agent args %v lack --nri-socket", spec.Containers[0].Args)
			}
			i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "nri" })
			if i < 0 || spec.Volumes[i].HostPath == nil || spec.Volumes[i].HostPath.Type == nil || *spec.Volumes[i].HostPath.Type != corev1.HostPathDirectoryOrCreate {
				t.Errorf("agent volumes %v: want nri, the host folder made when missing", spec.Volumes)
			}
		})
	}
}
