package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// defaultVersion is the chart's version when the repository names none
// (pkg/version/VERSION).
const defaultVersion = "0.2.0-dev"

// Entry points of deploy/ that the chart is made from: the default install
// and the same install holding pods the other ways (holdModes).
const (
	defaultDir = "deploy/default"
	sandboxDir = "deploy/overlays/attach-at-sandbox-setup"
	nriDir     = "deploy/overlays/hold-with-nri"
	waitDir    = "deploy/overlays/hold-with-wait-container"
	chartDir   = "deploy/helm/podnet"
)

func main() {
	root := flag.String("root", ".", "repository root")
	out := flag.String("out", chartDir, "chart folder to (re)write, relative to -root unless absolute")
	kubectl := flag.String("kubectl", "_output/k8s/bin/kubectl", "kubectl whose kustomize renders deploy/ (relative to -root unless absolute)")
	flag.Parse()
	files, err := generate(*root, abs(*root, *kubectl))
	if err == nil {
		err = write(abs(*root, *out), files)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helmchart:", err)
		os.Exit(1)
	}
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(root, p)
}

// write replaces the chart folder with files, so that a file the
// generator no longer makes does not linger.
func write(dir string, files map[string][]byte) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %q: %w", dir, err)
	}
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("chart folder %q: %w", filepath.Dir(p), err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("write %q: %w", p, err)
		}
	}
	return nil
}

// generate renders deploy/ and returns the chart's files by path.
func generate(root, kubectl string) (map[string][]byte, error) {
	base, err := kustomize(kubectl, filepath.Join(root, defaultDir))
	if err != nil {
		return nil, err
	}
	var modes []variant
	for _, m := range holdModes {
		objs, err := kustomize(kubectl, filepath.Join(root, m.dir))
		if err != nil {
			return nil, err
		}
		modes = append(modes, variant{holdMode: m, objs: objs})
	}
	version, err := projectVersion(root)
	if err != nil {
		return nil, err
	}
	c := newChart()
	files := map[string][]byte{}
	if err := c.templates(base, modes, files); err != nil {
		return nil, err
	}
	values, err := c.valuesFile()
	if err != nil {
		return nil, err
	}
	files["values.yaml"] = values
	files["Chart.yaml"] = chartYAML(version)
	if err := foreignCRDs(root, files); err != nil {
		return nil, err
	}
	err = fs.WalkDir(static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(path)
		files[strings.TrimPrefix(path, "static/")] = data
		return err
	})
	return files, err
}

// foreignCRDs puts the CRDs of other projects' APIs podnet reads
// (deploy/crd/multinetworkpolicy) into the chart's crds/: Helm installs
// those only where absent and never upgrades or deletes them, so a
// cluster that has the API from its own project keeps its own.
func foreignCRDs(root string, files map[string][]byte) error {
	dir := filepath.Join(root, "deploy", "crd", "multinetworkpolicy")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("foreign CRDs: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") || e.Name() == "kustomization.yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("foreign CRDs: %w", err)
		}
		files["crds/"+e.Name()] = data
	}
	return nil
}

// projectVersion is the version the repository names, or defaultVersion.
func projectVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "pkg", "version", "VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		return defaultVersion, nil
	}
	if err != nil {
		return "", fmt.Errorf("read the project version: %w", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(data)), "v")
	if v == "" {
		return "", fmt.Errorf("pkg/version/VERSION is empty")
	}
	return v, nil
}

// kustomize renders a kustomization with kubectl's kustomize, the one
// users run with `kubectl apply -k`.
func kustomize(kubectl, dir string) ([]object, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	objs, err := decodeAll(out)
	if err != nil {
		return nil, fmt.Errorf("kustomize output of %s: %w", dir, err)
	}
	return objs, nil
}

// object is one manifest as YAML decodes it.
type object = map[string]any

// decodeAll decodes a stream of YAML documents, skipping empty ones.
func decodeAll(data []byte) ([]object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []object
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decode document %d: %w", len(objs)+1, err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
}

func chartYAML(version string) []byte {
	return []byte(`# Generated by hack/helmchart from deploy/ (make chart); do not edit.
apiVersion: v2
name: podnet
description: Secondary networks for unprivileged pods in multi-tenant Kubernetes clusters.
type: application
version: ` + version + `
appVersion: "` + version + `"
# The oldest Kubernetes the tests run podnet on (hack/tools-min).
kubeVersion: ">=1.32.0-0"
keywords: [networking, cni, multus, secondary-networks]
`)
}
