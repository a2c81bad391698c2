package deploy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestHoldOverlays: the default install lets the webhook choose the hold
// per cluster (no --hold-pods: its default, auto), and each overlay sets
// its one mode. Every install's agent connects to the runtime's NRI socket
// through a mount of its folder (a file mount would keep a restarted
// runtime's old socket), made when missing so that the agent starts on a
// node without NRI; only attach-at-sandbox-setup's serves the chained CNI
// plugin.
func TestHoldOverlays(t *testing.T) {
	for dir, hold := range map[string]string{
		".":                                 "",
		"overlays/hold-with-nri":            "--hold-pods=nri",
		"overlays/hold-with-wait-container": "--hold-pods=waitInitContainer",
		"overlays/attach-at-sandbox-setup":  "--hold-pods=attachAtSandboxSetup",
	} {
		t.Run(dir, func(t *testing.T) {
			webhook, agent := workloads(t, dir)
			wargs := webhook.Spec.Template.Spec.Containers[0].Args
			var holds []string
			for _, a := range wargs {
				if strings.HasPrefix(a, "--hold-pods") || strings.HasPrefix(a, "--attach-at-sandbox-setup") {
					holds = append(holds, a)
				}
			}
			if want := []string{hold}; (hold == "" && len(holds) != 0) || (hold != "" && !slices.Equal(holds, want)) {
				t.Errorf("webhook args %v: hold flags %v, want %q", wargs, holds, hold)
			}
			spec := agent.Spec.Template.Spec
			if !slices.Contains(spec.Containers[0].Args, "--nri-socket=/var/run/nri/nri.sock") {
				t.Errorf("agent args %v lack --nri-socket", spec.Containers[0].Args)
			}
			i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "nri" })
			if i < 0 {
				t.Fatalf("agent volumes %v lack nri", spec.Volumes)
			}
			if hp := spec.Volumes[i].HostPath; hp == nil || hp.Path != "/var/run/nri" || hp.Type == nil || *hp.Type != corev1.HostPathDirectoryOrCreate {
				t.Errorf("nri volume %+v, want the host folder /var/run/nri, made when missing", spec.Volumes[i])
			}
			j := slices.IndexFunc(spec.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "nri" })
			if j < 0 || spec.Containers[0].VolumeMounts[j].MountPath != "/var/run/nri" {
				t.Errorf("agent mounts %v: want nri at /var/run/nri, the --nri-socket folder", spec.Containers[0].VolumeMounts)
			}
			cni := slices.ContainsFunc(spec.Containers[0].Args, func(a string) bool { return strings.HasPrefix(a, "--cni-socket") })
			if want := dir == "overlays/attach-at-sandbox-setup"; cni != want || (len(spec.InitContainers) != 0) != want {
				t.Errorf("agent serves the chained CNI plugin = %v (init containers %v), want %v", cni, spec.InitContainers, want)
			}
		})
	}
}
