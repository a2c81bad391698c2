package deploy

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNoInstallServesProfiles: Go's /debug/pprof is a bench's tool, not an
// install's. Every kustomization users apply, and the Helm chart, leave
// each component's --pprof-bind-address at its default of 0 (no
// endpoint): a pod on the node could otherwise read the agent's heap or
// slow each attach on the node with back-to-back CPU profiles.
func TestNoInstallServesProfiles(t *testing.T) {
	dirs := []string{"."}
	overlays, err := os.ReadDir("overlays")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range overlays {
		dirs = append(dirs, filepath.Join("overlays", o.Name()))
	}
	for _, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			n := 0
			for _, o := range build(t, dir) {
				if k := o.GetKind(); k != "Deployment" && k != "DaemonSet" {
					continue
				}
				var w struct {
					Spec struct {
						Template corev1.PodTemplateSpec `json:"template"`
					} `json:"spec"`
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &w); err != nil {
					t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
				}
				spec := w.Spec.Template.Spec
				for _, c := range append(spec.InitContainers, spec.Containers...) {
					n++
					for _, a := range append(c.Command, c.Args...) {
						if strings.HasPrefix(a, "--pprof-bind-address") && a != "--pprof-bind-address=0" {
							t.Errorf("%s %s container %s: %s serves Go's profiles", o.GetKind(), o.GetName(), c.Name, a)
						}
					}
				}
			}
			if n == 0 {
				t.Fatalf("%s renders no workload container", dir)
			}
		})
	}
	t.Run("helm", func(t *testing.T) {
		err := filepath.WalkDir(filepath.Join("helm", "podnet"), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if strings.Contains(string(b), "pprof") {
				t.Errorf("%s mentions pprof: the chart must not offer the profiling endpoint", path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
