package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// WriteTarball writes img as a docker-save tarball named ref at file. The
// tarball appears atomically (temporary file, then rename), so a reader
// importing it while it is rebuilt sees the old or the new image, never half.
func WriteTarball(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image name %q: %w", ref, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tarball.Write(tag, img, tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write image %q to %q: %w", ref, tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write image %q to %q: %w", ref, tmp.Name(), err)
	}
	// CreateTemp makes the file private; a tarball is not secret.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("image %q: %w", ref, err)
	}
	return nil
}

// RegistryRef renames a local podnet image for a registry: the Repository
// prefix "localhost/podnet" is replaced by registry, which is a host with an
// optional port and path ("ghcr.io/acme/podnet", "localhost:5000"). So
// localhost/podnet/agent:v1 becomes ghcr.io/acme/podnet/agent:v1.
func RegistryRef(local, registry string) (name.Tag, error) {
	registry = strings.TrimSuffix(registry, "/")
	if registry == "" {
		return name.Tag{}, fmt.Errorf("registry is empty: give a host and optional path, e.g. ghcr.io/acme/podnet")
	}
	if strings.Contains(registry, "@") || strings.Contains(registry, "://") {
		return name.Tag{}, fmt.Errorf("registry %q: give a host and optional path, without scheme, tag or digest", registry)
	}
	if last := registry[strings.LastIndex(registry, "/")+1:]; strings.Contains(registry, "/") && strings.Contains(last, ":") {
		return name.Tag{}, fmt.Errorf("registry %q: must not carry a tag; the tag comes from the image", registry)
	}
	short, err := ShortName(local)
	if err != nil {
		return name.Tag{}, err
	}
	localTag, err := name.NewTag(local, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q: %w", local, err)
	}
	remoteName := registry + "/" + short + ":" + localTag.TagStr()
	tag, err := name.NewTag(remoteName, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("registry %q gives invalid image name %q: %w", registry, remoteName, err)
	}
	return tag, nil
}

// Push writes img to a registry, authenticating as the local docker config
// (~/.docker/config.json and credential helpers) says.
func Push(ctx context.Context, img v1.Image, ref name.Tag) error {
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("push %q: %w", ref.String(), err)
	}
	return nil
}
