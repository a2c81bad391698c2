package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// root is the repository root, seen from this package's folder.
const root = "../.."

// helmBin builds helm through hack/helm/build.sh (cached by its pin), as
// `make helm` does.
func helmBin(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "helm", "build.sh"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/helm/build.sh: %v\n%s", err, out)
	}
	return filepath.Join(root, "_output", "helm", "bin", "helm")
}

func kubectlBin(t *testing.T) string {
	t.Helper()
	k := filepath.Join(root, "_output", "k8s", "bin", "kubectl")
	if _, err := os.Stat(k); err != nil {
		t.Fatalf("kubectl missing: run `make k8s` (%v)", err)
	}
	return k
}

// render runs `helm template` of the chart folder in namespace ns with
// the --set flags, and returns its objects by kind/namespace/name.
func render(t *testing.T, ns string, set ...string) map[string]object {
	t.Helper()
	out, err := renderErr(t, ns, set...)
	if err != nil {
		t.Fatal(err)
	}
	return byID(t, out)
}

func renderErr(t *testing.T, ns string, set ...string) ([]byte, error) {
	t.Helper()
	var args []string
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return renderArgs(t, ns, args...)
}

// renderArgs runs `helm template` of the committed chart with flags.
func renderArgs(t *testing.T, ns string, flags ...string) ([]byte, error) {
	t.Helper()
	args := append([]string{"template", "podnet", chartPath, "--namespace", ns}, flags...)
	cmd := exec.Command(helmBin(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// kustomized renders a deploy/ entry point as `kubectl apply -k` would.
func kustomized(t *testing.T, dir string) map[string]object {
	t.Helper()
	cmd := exec.Command(kubectlBin(t), "kustomize", dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return byID(t, out)
}

func byID(t *testing.T, data []byte) map[string]object {
	t.Helper()
	objs, err := decodeAll(data)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]object{}
	for _, o := range objs {
		k := fullID(o)
		if _, dup := m[k]; dup {
			t.Fatalf("%s rendered twice", k)
		}
		m[k] = o
	}
	return m
}

func fullID(o object) string {
	meta, _ := o["metadata"].(map[string]any)
	ns, _ := meta["namespace"].(string)
	return kindOf(o) + "/" + ns + "/" + nameOf(o)
}

// helmLabels and helmAnnotations are what the chart adds to deploy/'s
// objects for Helm's own bookkeeping.
var (
	helmLabels      = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}
	helmAnnotations = []string{"helm.sh/resource-policy"}
)

// normalize removes the Helm-only metadata from every object, after
// checking that the chart put its labels on each.
func normalize(t *testing.T, objs map[string]object, wantHelmLabels bool) {
	t.Helper()
	for id, o := range objs {
		meta, _ := o["metadata"].(map[string]any)
		for field, keys := range map[string][]string{"labels": helmLabels, "annotations": helmAnnotations} {
			m, _ := meta[field].(map[string]any)
			if wantHelmLabels && field == "labels" {
				if m["app.kubernetes.io/managed-by"] != "Helm" || m["app.kubernetes.io/instance"] != "podnet" {
					t.Errorf("%s lacks the release's labels: %v", id, m)
				}
			}
			for _, k := range keys {
				delete(m, k)
			}
			if m != nil && len(m) == 0 {
				delete(meta, field)
			}
		}
	}
}

// compare reports every object that is in one set and not the other, or
// whose content differs.
func compare(t *testing.T, what string, got, want map[string]object) {
	t.Helper()
	for _, id := range sortedIDs(want) {
		g, ok := got[id]
		if !ok {
			t.Errorf("%s: %s missing from the chart", what, id)
			continue
		}
		if !reflect.DeepEqual(g, want[id]) {
			t.Errorf("%s: %s differs (- chart, + want):\n%s", what, id, lineDiff(g, want[id]))
		}
	}
	for _, id := range sortedIDs(got) {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: the chart has %s, which it should not", what, id)
		}
	}
}

func sortedIDs(m map[string]object) []string { return slices.Sorted(maps.Keys(m)) }

// lineDiff shows the lines of a's YAML not in b's (-) and b's not in a's
// (+): enough to see which field drifted.
func lineDiff(a, b object) string {
	al, bl := yamlLines(a), yamlLines(b)
	count := func(l []string) map[string]int {
		m := map[string]int{}
		for _, s := range l {
			m[s]++
		}
		return m
	}
	ac, bc := count(al), count(bl)
	var out []string
	for _, s := range al {
		if bc[s] == 0 {
			out = append(out, "- "+s)
		} else {
			bc[s]--
		}
	}
	for _, s := range bl {
		if ac[s] == 0 {
			out = append(out, "+ "+s)
		} else {
			ac[s]--
		}
	}
	return strings.Join(out, "\n")
}

func yamlLines(o object) []string {
	data, _ := yaml.Marshal(o)
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// only returns the objects of kind.
func only(objs map[string]object, kind string) map[string]object {
	m := map[string]object{}
	for id, o := range objs {
		if kindOf(o) == kind {
			m[id] = o
		}
	}
	return m
}

// without returns objs less the ids.
func without(objs map[string]object, ids ...string) map[string]object {
	m := map[string]object{}
	for id, o := range objs {
		m[id] = o
	}
	for _, id := range ids {
		delete(m, id)
	}
	return m
}
