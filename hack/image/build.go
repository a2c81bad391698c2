package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is every file's and the image's time, so that the same inputs
// always give the same digest.
var epoch = time.Unix(0, 0).UTC()

// Build turns a spec into an image for linux on this machine's architecture
// (the binaries inside are built here, for here).
func Build(s Spec) (v1.Image, error) {
	if err := validateSpec(s); err != nil {
		return nil, err
	}
	if err := validateSources(s); err != nil {
		return nil, err
	}
	data, err := layerTar(s.Files)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", s.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("image %q: layer: %w", s.Name, err)
	}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "podnet hack/image"},
	})
	if err != nil {
		return nil, fmt.Errorf("image %q: append layer: %w", s.Name, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %q: config: %w", s.Name, err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config = v1.Config{
		Entrypoint: s.Entrypoint,
		Cmd:        s.Cmd,
		User:       s.User,
		Env:        s.Env,
		Labels:     s.Labels,
		WorkingDir: "/",
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("image %q: set config: %w", s.Name, err)
	}
	return img, nil
}

// layerTar writes the files, and every parent directory not listed, into an
// uncompressed tar in path order, owned by root with fixed times.
func layerTar(files []File) ([]byte, error) {
	entries := map[string]File{}
	for _, f := range files {
		entries[f.Path] = f
		for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
			if _, ok := entries[dir]; !ok {
				entries[dir] = File{Path: dir, Dir: true}
			}
		}
	}
	paths := make([]string, 0, len(entries))
	for p := range entries {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		if err := writeEntry(tw, entries[p]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close tar: %w", err)
	}
	return buf.Bytes(), nil
}

// writeEntry writes one file; tar names are relative ("usr/bin/x"), as
// image layers conventionally are.
func writeEntry(tw *tar.Writer, f File) error {
	hdr := &tar.Header{Name: f.Path[1:], ModTime: epoch, Mode: f.Mode, Format: tar.FormatPAX}
	var content []byte
	switch {
	case f.Dir:
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
		if hdr.Mode == 0 {
			hdr.Mode = 0o755
		}
	case f.Link != "":
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = f.Link
		hdr.Mode = 0o777
	default:
		content = f.Data
		if f.Source != "" {
			b, err := os.ReadFile(f.Source)
			if err != nil {
				return fmt.Errorf("read %q for %q: %w", f.Source, f.Path, err)
			}
			content = b
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = int64(len(content))
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
		}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tar header %q: %w", f.Path, err)
	}
	if _, err := tw.Write(content); err != nil {
		return fmt.Errorf("tar content %q: %w", f.Path, err)
	}
	return nil
}
