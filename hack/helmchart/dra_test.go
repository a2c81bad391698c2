package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartDRAMatchesTheComponent: dra.enabled renders the agent as
// deploy/default with deploy/components/dra-kubelet-plugin does, and
// dra.kubeletDir moves the flag and both folders, on the node and in the
// agent alike.
func TestChartDRAMatchesTheComponent(t *testing.T) {
	got := render(t, Namespace, "dra.enabled=true", "namespace.create=true")
	normalize(t, got, true)
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(root, "deploy"))); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlays", "dra")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../default]\ncomponents: [../../components/dra-kubelet-plugin]\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	compare(t, "dra.enabled", without(without(got, keySecrets...), uninstallHook(Namespace)...), kustomized(t, overlay))

	moved := podSpecOf(t, render(t, Namespace, "dra.enabled=true", "dra.kubeletDir=/data/kubelet")["DaemonSet/podnet-system/podnet-agent"])
	if args := argsOf(t, moved, "agent"); !strings.Contains(args, "--dra-kubelet-dir=/data/kubelet") {
		t.Errorf("agent args %s lack the kubelet dir value", args)
	}
	paths := map[string]string{}
	for _, v := range moved["volumes"].([]any) {
		if v := v.(map[string]any); strings.HasPrefix(v["name"].(string), "kubelet-plugins") {
			paths[v["name"].(string)] = v["hostPath"].(map[string]any)["path"].(string)
		}
	}
	for _, m := range containerOf(t, moved, "agent")["volumeMounts"].([]any) {
		if m := m.(map[string]any); strings.HasPrefix(m["name"].(string), "kubelet-plugins") && paths[m["name"].(string)] != m["mountPath"] {
			t.Errorf("volume %s on the node at %q, in the agent at %q", m["name"], paths[m["name"].(string)], m["mountPath"])
		}
	}
	if paths["kubelet-plugins-registry"] != "/data/kubelet/plugins_registry" {
		t.Errorf("registry folder %q, want /data/kubelet/plugins_registry", paths["kubelet-plugins-registry"])
	}
	if args := argsOf(t, podSpecOf(t, render(t, Namespace)["DaemonSet/podnet-system/podnet-agent"]), "agent"); strings.Contains(args, "--dra-kubelet-dir") {
		t.Errorf("default values: agent args %s serve DRA", args)
	}
}
