package bench

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWorkloadEnvResolvesTheManifest: a Deployment's and a DaemonSet's
// environment come out of a manifest with the memory limit resolved to
// bytes, the caller's GOGC and GOMEMLIMIT cleared first, a fieldRef left
// out; a workload of the other kind or another name is not found.
func TestWorkloadEnvResolvesTheManifest(t *testing.T) {
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      containers:
      - name: web
        env:
        - {name: GOGC, value: "75"}
        resources: {limits: {memory: 64Mi}}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: node}
spec:
  template:
    spec:
      containers:
      - name: node
        env:
        - name: NODE_NAME
          valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
        - name: GOMEMLIMIT
          valueFrom: {resourceFieldRef: {containerName: node, resource: limits.memory}}
        - {name: GOGC, value: "50"}
        resources: {limits: {memory: 256Mi}}
`
	file := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(file, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		get  func(string, string) ([]string, error)
		name string
		want []string
	}{
		{DeploymentEnv, "web", []string{"GOGC=", "GOMEMLIMIT=", "GOGC=75"}},
		{DaemonSetEnv, "node", []string{"GOGC=", "GOMEMLIMIT=", "GOMEMLIMIT=268435456", "GOGC=50"}},
	} {
		got, err := c.get(file, c.name)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("env of %s = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := DaemonSetEnv(file, "web"); err == nil {
		t.Error("DaemonSetEnv found the Deployment web")
	}
	if _, err := DeploymentEnv(file, "node"); err == nil {
		t.Error("DeploymentEnv found the DaemonSet node")
	}
}
