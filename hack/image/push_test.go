package image

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestPush pushes an image the way `make push` does to go-containerregistry's
// in-process registry (the real distribution protocol over HTTP) and pulls
// it back by the rewritten name.
func TestPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")

	img := mustBuild(t, PauseSpec(fakeBinary(t, "pause")))
	ref, err := RegistryRef(Ref(AgentName, "v0.1.0"), host+"/acme/podnet")
	if err != nil {
		t.Fatal(err)
	}
	if want := host + "/acme/podnet/agent:v0.1.0"; ref.String() != want {
		t.Fatalf("ref = %q, want %q", ref.String(), want)
	}
	if err := Push(context.Background(), img, ref); err != nil {
		t.Fatal(err)
	}
	back, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	want, _ := img.Digest()
	got, err := back.Digest()
	if err != nil || got != want {
		t.Errorf("pulled digest %s (%v), pushed %s", got, err, want)
	}
}
