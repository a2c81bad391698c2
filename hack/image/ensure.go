package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// PausePackage is the Go package of the pause program, relative to the
// module root.
const PausePackage = "./hack/image/pause"

// HostBusybox is Debian busybox-static's binary, the source of BusyboxImage.
const HostBusybox = "/bin/busybox"

// ImagesDir is where tarballs go, relative to the module root.
const ImagesDir = "_output/images"

// EnsureTestImages builds the pause and busybox tarballs into
// <root>/_output/images and returns their paths by image name, for harnesses
// that start containerd. root is the module root. It rebuilds on every call:
// builds are deterministic and take about a second, and an unchanged image
// is rewritten byte for byte, so a stale tarball can never be imported.
func EnsureTestImages(ctx context.Context, root string) (map[string]string, error) {
	out := filepath.Join(root, "_output")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	// A private build folder: several test binaries may call this at once.
	tmp, err := os.MkdirTemp(out, "pause-build-")
	if err != nil {
		return nil, fmt.Errorf("test images: %w", err)
	}
	defer os.RemoveAll(tmp)
	pause := filepath.Join(tmp, "pause")
	if err := BuildGoBinary(ctx, root, PausePackage, pause); err != nil {
		return nil, err
	}
	busybox, err := BusyboxSpec(HostBusybox)
	if err != nil {
		return nil, err
	}
	return WriteSpecs(filepath.Join(root, ImagesDir), PauseSpec(pause), busybox)
}

// WriteSpecs builds every spec and writes it as <dir>/<short name>.tar,
// returning the tarball paths by image name. It carries on past a failing
// image so one report lists every problem.
func WriteSpecs(dir string, specs ...Spec) (map[string]string, error) {
	paths := map[string]string{}
	var errs []error
	for _, s := range specs {
		file, err := writeSpec(dir, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		paths[s.Name] = file
	}
	return paths, errors.Join(errs...)
}

func writeSpec(dir string, s Spec) (string, error) {
	short, err := ShortName(s.Name)
	if err != nil {
		return "", err
	}
	img, err := Build(s)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, TarballName(short))
	return file, WriteTarball(file, s.Name, img)
}

// The packages of podnet's binaries, as `make build` builds them. Whoever
// builds an image from them builds the binaries its spec names through
// these lists, so an image never misses one of its files.
const (
	// WaitCommand is the package of podnet-wait, the injected init container.
	WaitCommand = "./cmd/podnet-wait"
	// CNICommand is the package of podnet-cni, the chained CNI plugin.
	CNICommand = "./cmd/podnet-cni"
	// AgentCommand is the package of podnet-agent.
	AgentCommand = "./cmd/podnet-agent"
)

// AgentCommands are the packages of every binary AgentSpec's image holds
// (podnet-wait too, which WaitSpec's image holds alone).
var AgentCommands = []string{AgentCommand, CNICommand, WaitCommand}

// commandFlags are the build flags of a command beyond -trimpath, as
// `make build` builds it. podnet-wait runs in every podnet pod and the
// agent on every node, so both are stripped (-s -w: no symbol table and
// DWARF, which Go's stack traces and pprof do not need), for smaller images.
// The agent leaves out gRPC's request tracing (grpcnotrace): it imports
// html/template, whose reflection on method names keeps every exported
// method of every linked type in the binary, and the binary's code pages
// are most of the agent's resident memory. The long-running webhook and
// controller keep their symbols for debugging.
var commandFlags = map[string][]string{
	WaitCommand:  {"-ldflags=-s -w"},
	AgentCommand: {"-tags=grpcnotrace", "-ldflags=-s -w"},
}

// BuildGoBinary builds a static binary of pkg (relative to the module root)
// at out, as `make build` does.
func BuildGoBinary(ctx context.Context, root, pkg, out string) error {
	return BuildGoBinaryAs(ctx, root, pkg, pkg, out)
}

// BuildGoBinaryAs builds pkg with the build flags of the command as (one
// of the constants above), for a program that must be built as that
// command is, such as a bench's floor that links the same packages.
func BuildGoBinaryAs(ctx context.Context, root, pkg, as, out string) error {
	args := append([]string{"build", "-trimpath"}, commandFlags[as]...)
	cmd := exec.CommandContext(ctx, goTool(), append(args, "-o", out, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// goTool finds the go command: on PATH, else where GOROOT or this machine's
// install puts it (tests may run with a bare PATH).
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if r := os.Getenv("GOROOT"); r != "" {
		return filepath.Join(r, "bin", "go")
	}
	return "/usr/local/go/bin/go"
}
