// Command podnet-image builds podnet's container images without a Docker
// engine (`make image`) and pushes the webhook and agent images to a
// registry (`make push REGISTRY=...`).
//
//	podnet-image build [-root .] [-bin _output/bin] [-out _output/images] [-tag dev]
//	podnet-image push -registry ghcr.io/acme/podnet [-bin _output/bin] [-tag dev]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"

	"podnet.io/podnet/hack/image"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "build":
		err = runBuild(ctx, os.Args[2:])
	case "push":
		err = runPush(ctx, os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "podnet-image:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: podnet-image build [-root dir] [-bin dir] [-out dir] [-tag tag]\n       podnet-image push -registry host[/path] [-bin dir] [-tag tag]")
	os.Exit(2)
}

// runBuild writes all four tarballs: pause and busybox for the local
// cluster, webhook and agent from the binaries `make build` wrote.
func runBuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	root := fs.String("root", ".", "module root")
	bin := fs.String("bin", "_output/bin", "folder with podnet-webhook, podnet-agent and podnet-cni")
	out := fs.String("out", image.ImagesDir, "folder for the tarballs")
	tag := fs.String("tag", image.DefaultTag, "tag of the webhook and agent images")
	fs.Parse(args)

	test, err := image.EnsureTestImages(ctx, *root)
	if err != nil {
		return err
	}
	paths, err := image.WriteSpecs(*out, image.WebhookSpec(*bin, *tag), image.AgentSpec(*bin, *tag), image.ControllerSpec(*bin, *tag))
	if err != nil {
		return err
	}
	// EnsureTestImages writes under the module root; copy only when -out
	// points elsewhere.
	if abs(*out) != abs(filepath.Join(*root, image.ImagesDir)) {
		for ref, p := range test {
			dst := filepath.Join(*out, filepath.Base(p))
			if err := copyFile(p, dst); err != nil {
				return fmt.Errorf("image %q: %w", ref, err)
			}
			test[ref] = dst
		}
	}
	for ref, p := range test {
		paths[ref] = p
	}
	refs := make([]string, 0, len(paths))
	for ref := range paths {
		refs = append(refs, ref)
	}
	sort.Strings(refs)
	for _, ref := range refs {
		fmt.Printf("%s\t%s\n", ref, paths[ref])
	}
	return nil
}

// runPush builds the webhook and agent images exactly as `build` does and
// writes them to the registry instead of a tarball.
func runPush(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	registry := fs.String("registry", "", "registry host and path replacing "+image.Repository)
	bin := fs.String("bin", "_output/bin", "folder with podnet-webhook, podnet-agent and podnet-cni")
	tag := fs.String("tag", image.DefaultTag, "tag to push")
	fs.Parse(args)

	for _, s := range []image.Spec{image.WebhookSpec(*bin, *tag), image.AgentSpec(*bin, *tag), image.ControllerSpec(*bin, *tag)} {
		ref, err := image.RegistryRef(s.Name, *registry)
		if err != nil {
			return err
		}
		img, err := image.Build(s)
		if err != nil {
			return err
		}
		if err := image.Push(ctx, img, ref); err != nil {
			return err
		}
		fmt.Println(ref.String())
	}
	return nil
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
