package deploy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHoldWithNRIOverlay: the overlay makes the webhook hold pods with NRI
// and the agent connect to the runtime's NRI socket through a mount of its
// folder (a file mount would keep a restarted runtime's old socket), which
// is made when missing so that the agent starts on a node without NRI; it
// adds no wait-container flag and nothing of the chained CNI plugin, and
// the default install none of it.
func TestHoldWithNRIOverlay(t *testing.T) {
	for dir, on := range map[string]bool{".": false, "overlays/attach-at-sandbox-setup": false, "overlays/hold-with-nri": true} {
		t.Run(dir, func(t *testing.T) {
			webhook, agent := workloads(t, dir)
			wargs := webhook.Spec.Template.Spec.Containers[0].Args
			if got := slices.Contains(wargs, "--hold-pods=nri"); got != on {
				t.Errorf("webhook args %v: --hold-pods=nri present = %v, want %v", wargs, got, on)
			}
			if slices.Contains(wargs, "--attach-at-sandbox-setup") {
				t.Errorf("webhook args %v use the deprecated flag", wargs)
			}
			spec := agent.Spec.Template.Spec
			if got := slices.Contains(spec.Containers[0].Args, "--nri-socket=/var/run/nri/nri.sock"); got != on {
				t.Errorf("agent args %v: --nri-socket present = %v, want %v", spec.Containers[0].Args, got, on)
			}
			i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "nri" })
			if (i >= 0) != on {
				t.Fatalf("agent volumes %v: nri present = %v, want %v", spec.Volumes, i >= 0, on)
			}
			if !on {
				return
			}
			if hp := spec.Volumes[i].HostPath; hp == nil || hp.Path != "/var/run/nri" || hp.Type == nil || *hp.Type != corev1.HostPathDirectoryOrCreate {
				t.Errorf("nri volume %+v, want the host folder /var/run/nri, made when missing", spec.Volumes[i])
			}
			j := slices.IndexFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "nri" })
			if j < 0 || spec.Containers[0].VolumeMounts[j].MountPath != "/var/run/nri" {
				t.Errorf("agent mounts %v: want nri at /var/run/nri, the --nri-socket folder", spec.Containers[0].VolumeMounts)
			}
			if len(spec.InitContainers) != 0 || slices.ContainsFunc(spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--cni-socket") }) {
				t.Errorf("agent serves the chained CNI plugin too: init containers %v, args %v", spec.InitContainers, spec.Containers[0].Args)
			}
		})
	}
}
