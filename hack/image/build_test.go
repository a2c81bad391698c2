package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"podnet.io/podnet/pkg/version"
)

// layerEntry is what a test sees of one tar entry.
type layerEntry struct {
	hdr  *tar.Header
	data []byte
}

// readLayer returns the only layer's entries by path ("/bin/sh").
func readLayer(t *testing.T, img v1.Image) map[string]layerEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("got %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries := map[string]layerEntry{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		entries["/"+strings.TrimSuffix(hdr.Name, "/")] = layerEntry{hdr: hdr, data: b}
	}
}

func fakeBinary(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bin")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustBuild(t *testing.T, s Spec) v1.Image {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatalf("build %q: %v", s.Name, err)
	}
	return img
}

func TestBinaryImage(t *testing.T) {
	// AgentSpec expects the binary named podnet-agent in binDir.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "podnet-agent"), []byte("agent-binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "podnet-cni"), []byte("cni-binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "podnet-wait"), []byte("wait-binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := AgentSpec(dir, "v9")
	if s.Name != "localhost/podnet/agent:v9" {
		t.Errorf("name = %q, want the tag applied", s.Name)
	}
	img := mustBuild(t, s)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH {
		t.Errorf("platform = %s/%s, want linux/%s", cfg.OS, cfg.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{AgentBinary}) || cfg.Config.User != NonRootUser {
		t.Errorf("entrypoint %v user %q, want [%s] %q", cfg.Config.Entrypoint, cfg.Config.User, AgentBinary, NonRootUser)
	}
	entries := readLayer(t, img)
	agent, ok := entries[AgentBinary]
	if !ok || string(agent.data) != "agent-binary" || agent.hdr.Mode != 0o755 || agent.hdr.Uid != 0 {
		t.Errorf("%s in layer = %+v, want the binary, 0755, owned by root", AgentBinary, agent.hdr)
	}
	if cni, ok := entries[CNIPluginBinary]; !ok || string(cni.data) != "cni-binary" || cni.hdr.Mode != 0o755 {
		t.Errorf("%s in layer = %+v, want the plugin, 0755", CNIPluginBinary, cni.hdr)
	}
	if w, ok := entries[WaitBinary]; !ok || string(w.data) != "wait-binary" || w.hdr.Mode != 0o755 {
		t.Errorf("%s in layer = %+v, want the wait hook, 0755", WaitBinary, w.hdr)
	}
	for _, dir := range []string{"/usr", "/usr/local", "/usr/local/bin"} {
		if e, ok := entries[dir]; !ok || e.hdr.Typeflag != tar.TypeDir {
			t.Errorf("parent directory %s missing from layer", dir)
		}
	}
	if e := entries["/tmp"]; e.hdr == nil || e.hdr.Mode != 0o1777 {
		t.Errorf("/tmp = %+v, want mode 1777", e.hdr)
	}
	if e := entries["/etc/passwd"]; e.hdr == nil || !bytes.Contains(e.data, []byte(":65532:65532:")) {
		t.Errorf("/etc/passwd lacks the non-root user 65532")
	}
}

func TestBusyboxImage(t *testing.T) {
	s, err := BusyboxSpec(HostBusybox)
	if err != nil {
		t.Fatalf("busybox-static must be installed (hack/setup.sh): %v", err)
	}
	img := mustBuild(t, s)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != RootUser || !slices.Equal(cfg.Config.Cmd, []string{"/bin/sh"}) || len(cfg.Config.Entrypoint) != 0 {
		t.Errorf("config user %q cmd %v entrypoint %v, want root, [/bin/sh], none", cfg.Config.User, cfg.Config.Cmd, cfg.Config.Entrypoint)
	}
	entries := readLayer(t, img)
	host, err := os.ReadFile(HostBusybox)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries["/bin/busybox"]; !bytes.Equal(e.data, host) || e.hdr.Mode != 0o755 {
		t.Errorf("/bin/busybox differs from %s or is not 0755", HostBusybox)
	}
	for _, a := range requiredApplets {
		e, ok := entries["/bin/"+a]
		if !ok || e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != "busybox" {
			t.Errorf("/bin/%s is not a symlink to busybox", a)
		}
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	bin := fakeBinary(t, "pause")
	s := PauseSpec(bin)
	first, err := mustBuild(t, s).Digest()
	if err != nil {
		t.Fatal(err)
	}
	second, err := mustBuild(t, s).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if first != second {
		t.Errorf("same inputs gave digests %s and %s", first, second)
	}
	other, err := mustBuild(t, PauseSpec(fakeBinary(t, "pause2"))).Digest()
	if err != nil {
		t.Fatal(err)
	}
	if other == first {
		t.Errorf("different binaries gave the same digest %s", first)
	}
}

func TestBuildRejectsBadSpecs(t *testing.T) {
	bin := fakeBinary(t, "x")
	ok := func() Spec { return BinarySpec("localhost/podnet/x:dev", bin, "/x", "") }
	with := func(change func(*Spec)) Spec { s := ok(); change(&s); return s }
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"no name", with(func(s *Spec) { s.Name = "" }), "name is empty"},
		{"no process", with(func(s *Spec) { s.Entrypoint = nil }), "neither entrypoint nor cmd"},
		{"relative path", with(func(s *Spec) { s.Files[0].Path = "etc/passwd" }), `path "etc/passwd" must be absolute`},
		{"unclean path", with(func(s *Spec) { s.Files[0].Path = "/etc/../passwd" }), "must be absolute and clean"},
		{"root path", with(func(s *Spec) { s.Files[0].Path = "/" }), "and not /"},
		{"twice", with(func(s *Spec) { s.Files = append(s.Files, s.Files[0]) }), "appears twice"},
		{"two kinds", with(func(s *Spec) { s.Files[0].Link = "y" }), "exactly one of source, data, link or dir must be set, got 2"},
		{"no kind", with(func(s *Spec) { s.Files = append(s.Files, File{Path: "/z"}) }), `"/z": exactly one`},
		{"mode", with(func(s *Spec) { s.Files[0].Mode = 0o10000 }), "mode 10000 has bits beyond 07777"},
		{"missing binary", BinarySpec("localhost/podnet/x:dev", "/nonexistent/podnet-agent", "/x", ""), "/nonexistent/podnet-agent"},
		{"directory as binary", BinarySpec("localhost/podnet/x:dev", t.TempDir(), "/x", ""), "is not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.spec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestValidateApplets(t *testing.T) {
	if err := validateApplets("bb", append([]string{"ash"}, requiredApplets...)); err != nil {
		t.Errorf("complete list rejected: %v", err)
	}
	err := validateApplets("bb", []string{"sh", "cat"})
	if err == nil || !strings.Contains(err.Error(), "ip ping sleep") {
		t.Errorf("error = %v, want the missing applets listed", err)
	}
	err = validateApplets("bb", append([]string{"../etc/x"}, requiredApplets...))
	if err == nil || !strings.Contains(err.Error(), "not a file name") {
		t.Errorf("error = %v, want a bad applet name rejected", err)
	}
}

// TestComponentSpecs: the one list of component images names every
// component once, each with its binary from binDir as entrypoint,
// non-root; the wait image holds nothing but the base files and
// podnet-wait.
// TestComponentImageNamesRelease: the built image's configuration carries
// the release as its OCI version label, whatever the tag.
func TestComponentImageNamesRelease(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "podnet-controller"), []byte("controller-binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var spec Spec
	for _, s := range ComponentSpecs(dir, "any-tag") {
		if s.Name == Ref(ControllerName, "any-tag") {
			spec = s
		}
	}
	cfg, err := mustBuild(t, spec).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Labels[VersionLabel]; got != version.Version {
		t.Fatalf("image labels %v: %s = %q, want %q", cfg.Config.Labels, VersionLabel, got, version.Version)
	}
}

func TestComponentSpecs(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{
		Ref(WebhookName, "v1"):    WebhookBinary,
		Ref(AgentName, "v1"):      AgentBinary,
		Ref(WaitName, "v1"):       WaitBinary,
		Ref(ControllerName, "v1"): ControllerBinary,
	}
	specs := ComponentSpecs(dir, "v1")
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d", len(specs), len(want))
	}
	for _, s := range specs {
		bin, ok := want[s.Name]
		if !ok {
			t.Fatalf("unexpected or repeated image %q", s.Name)
		}
		delete(want, s.Name)
		if !slices.Equal(s.Entrypoint, []string{bin}) || s.User != NonRootUser {
			t.Errorf("%s: entrypoint %v user %q, want [%s] %q", s.Name, s.Entrypoint, s.User, bin, NonRootUser)
		}
		if got := s.Labels[VersionLabel]; got != version.Version {
			t.Errorf("%s: label %s = %q, want the release %q", s.Name, VersionLabel, got, version.Version)
		}
		i := slices.IndexFunc(s.Files, func(f File) bool { return f.Path == bin })
		if i < 0 || s.Files[i].Source != filepath.Join(dir, path.Base(bin)) {
			t.Errorf("%s: files %+v, want %s from %s", s.Name, s.Files, bin, dir)
		}
	}
	w := WaitSpec(dir, "v1")
	if extra := len(w.Files) - len(baseFiles()); extra != 1 {
		t.Errorf("wait image holds %d files beyond the base ones, want only podnet-wait", extra)
	}
}
