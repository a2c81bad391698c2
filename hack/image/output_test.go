package image

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestRegistryRef(t *testing.T) {
	tests := []struct {
		local, registry, want, err string
	}{
		{local: AgentImage, registry: "ghcr.io/acme/podnet", want: "ghcr.io/acme/podnet/agent:dev"},
		{local: Ref(WebhookName, "v1.2.3"), registry: "registry.example.com:5000/", want: "registry.example.com:5000/webhook:v1.2.3"},
		{local: WebhookImage, registry: "localhost:5000", want: "localhost:5000/webhook:dev"},
		{local: AgentImage, registry: "", err: "registry is empty"},
		{local: AgentImage, registry: "https://ghcr.io/acme", err: "without scheme"},
		{local: AgentImage, registry: "ghcr.io/acme@sha256:00", err: "without scheme, tag or digest"},
		{local: AgentImage, registry: "ghcr.io/acme:v1", err: "must not carry a tag"},
		{local: AgentImage, registry: "ghcr.io/Acme", err: `invalid image name "ghcr.io/Acme/agent:dev"`},
		{local: "docker.io/library/busybox:1", registry: "ghcr.io/acme", err: "is not under localhost/podnet"},
	}
	for _, tt := range tests {
		t.Run(tt.local+"→"+tt.registry, func(t *testing.T) {
			got, err := RegistryRef(tt.local, tt.registry)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Errorf("got %q, want %q", got.String(), tt.want)
			}
		})
	}
}

func TestShortName(t *testing.T) {
	for ref, want := range map[string]string{PauseImage: "pause", Ref(AgentName, "x"): "agent"} {
		if got, err := ShortName(ref); err != nil || got != want {
			t.Errorf("ShortName(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, bad := range []string{"localhost/podnet/agent", "localhost/podnet/a/b:dev", "ghcr.io/podnet/agent:dev", "localhost/podnet/:dev"} {
		if _, err := ShortName(bad); err == nil {
			t.Errorf("ShortName(%q) accepted", bad)
		}
	}
}

// TestWriteTarball reads the tarball back the way an importer does: by its
// manifest.json tag.
func TestWriteTarball(t *testing.T) {
	dir := t.TempDir()
	img := mustBuild(t, PauseSpec(fakeBinary(t, "pause")))
	paths, err := WriteSpecs(dir, PauseSpec(fakeBinary(t, "pause")))
	if err != nil {
		t.Fatal(err)
	}
	file := paths[PauseImage]
	if file != filepath.Join(dir, "pause.tar") {
		t.Fatalf("paths = %v, want %s at pause.tar", paths, PauseImage)
	}
	tag, err := name.NewTag(PauseImage)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatalf("read back %s by tag %s: %v", file, tag, err)
	}
	want, _ := img.Digest()
	got, err := back.Digest()
	if err != nil || got != want {
		t.Errorf("digest read back = %s (%v), want %s", got, err, want)
	}
	st, err := os.Stat(file)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("tarball mode = %v (%v), want 0644", st.Mode(), err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Errorf("folder holds %d entries, want only the tarball (no temporary files)", len(left))
	}
}
