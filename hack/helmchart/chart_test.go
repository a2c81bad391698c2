package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var chartPath = filepath.Join(root, chartDir)

// TestChartIsCurrent regenerates the chart into a scratch folder and
// compares it file by file with deploy/helm/podnet: a change to deploy/
// or to the generator without `make chart` fails.
func TestChartIsCurrent(t *testing.T) {
	files, err := generate(root, kubectlBin(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for name, want := range files {
		seen[name] = true
		got, err := os.ReadFile(filepath.Join(chartPath, name))
		if err != nil {
			t.Errorf("%s/%s is generated but not committed: run `make chart`", chartDir, name)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s/%s is stale: run `make chart`", chartDir, name)
		}
	}
	err = filepath.WalkDir(chartPath, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(chartPath, path)
		if !seen[rel] {
			t.Errorf("%s/%s is not generated: remove it or add it to hack/helmchart", chartDir, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The chart's own objects: the approval key Secrets hack/deploy.sh makes
// outside the kustomization.
var keySecrets = []string{"Secret/podnet-system/podnet-approval-key", "Secret/podnet-system/podnet-approval-pub"}

// uninstallHook are the objects of helm uninstall's pre-delete hook, which
// deploy/ has no counterpart of (make undeploy runs the same step from the
// admin's machine); in namespace ns.
func uninstallHook(ns string) []string {
	return []string{
		"ServiceAccount/" + ns + "/podnet-uninstall", "Role/" + ns + "/podnet-uninstall",
		"RoleBinding/" + ns + "/podnet-uninstall", "Job/" + ns + "/podnet-uninstall",
		"ClusterRole//podnet-uninstall-" + ns, "ClusterRoleBinding//podnet-uninstall-" + ns,
	}
}

// TestChartRendersDeploy renders the chart with its default values and
// deploy/default with kustomize and compares the objects: the same kinds,
// namespaces and names, and the same content once Helm's own labels and
// annotations are removed. So do attaching at sandbox setup (against
// deploy/overlays/attach-at-sandbox-setup), holding with NRI (against
// deploy/overlays/hold-with-nri), holding with the wait container
// (against deploy/overlays/hold-with-wait-container) and another namespace (against
// deploy/default moved there).
func TestChartRendersDeploy(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		got := render(t, Namespace)
		normalize(t, got, true)
		for _, id := range keySecrets {
			if _, ok := got[id]; !ok {
				t.Errorf("the chart makes no %s", id)
			}
		}
		// --create-namespace makes the namespace; the chart does not.
		want := without(kustomized(t, filepath.Join(root, defaultDir)), "Namespace//"+Namespace)
		compare(t, "default values", without(without(got, keySecrets...), uninstallHook(Namespace)...), want)
	})
	t.Run("namespace and existing key secrets", func(t *testing.T) {
		got := render(t, Namespace, "namespace.create=true", "approvalKeys.existingSecrets=true", "uninstall.cleanNodes=false")
		normalize(t, got, true)
		compare(t, "namespace.create, approvalKeys.existingSecrets", got, kustomized(t, filepath.Join(root, defaultDir)))
	})
	t.Run("attach at sandbox setup", func(t *testing.T) {
		got := render(t, Namespace, "holdPods=attachAtSandboxSetup", "namespace.create=true")
		normalize(t, got, true)
		compare(t, "holdPods=attachAtSandboxSetup", without(without(got, keySecrets...), uninstallHook(Namespace)...), kustomized(t, filepath.Join(root, sandboxDir)))
	})
	t.Run("hold with nri", func(t *testing.T) {
		got := render(t, Namespace, "holdPods=nri", "namespace.create=true")
		normalize(t, got, true)
		compare(t, "holdPods=nri", without(without(got, keySecrets...), uninstallHook(Namespace)...), kustomized(t, filepath.Join(root, nriDir)))
	})
	t.Run("hold with the wait container", func(t *testing.T) {
		got := render(t, Namespace, "holdPods=waitInitContainer", "namespace.create=true")
		normalize(t, got, true)
		compare(t, "holdPods=waitInitContainer", without(without(got, keySecrets...), uninstallHook(Namespace)...), kustomized(t, filepath.Join(root, waitDir)))
	})
	t.Run("another namespace", func(t *testing.T) {
		got := render(t, "netops", "namespace.create=true")
		normalize(t, got, true)
		want := kustomized(t, movedDeploy(t, "netops"))
		got = without(got, uninstallHook("netops")...)
		compare(t, "release namespace netops", without(got, "Secret/netops/podnet-approval-key", "Secret/netops/podnet-approval-pub"), want)
	})
}

// movedDeploy copies deploy/ with deploy/default's namespace set to ns
// and returns the copy's default folder.
func movedDeploy(t *testing.T, ns string) string {
	t.Helper()
	copied := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(copied, os.DirFS(filepath.Join(root, "deploy"))); err != nil {
		t.Fatal(err)
	}
	k := filepath.Join(copied, "default", "kustomization.yaml")
	data, err := os.ReadFile(k)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.Replace(string(data), "\nnamespace: "+Namespace+"\n", "\nnamespace: "+ns+"\n", 1)
	if moved == string(data) {
		t.Fatalf("deploy/default/kustomization.yaml sets no `namespace: %s`", Namespace)
	}
	if err := os.WriteFile(k, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(copied, "default")
}

// TestChartLints runs `helm lint --strict` with the default values and
// with every optional part on.
func TestChartLints(t *testing.T) {
	for _, set := range []string{"", "holdPods=nri", "holdPods=attachAtSandboxSetup,namespace.create=true," +
		"monitoring.serviceMonitor.enabled=true,monitoring.prometheusRule.enabled=true,monitoring.dashboard.enabled=true"} {
		args := []string{"lint", "--strict", chartPath}
		if set != "" {
			args = append(args, "--set", set)
		}
		if out, err := exec.Command(helmBin(t), args...).CombinedOutput(); err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
