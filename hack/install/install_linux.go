package install

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/hack/progress"
)

// CertManagerImage is the image of hack/cert-manager's binary; the
// manifests in hack/cert-manager/deploy name it.
var CertManagerImage = image.Ref("cert-manager", image.DefaultTag)

const certManagerBinary = image.BinDir + "/cert-manager"

// Installer installs onto one running local cluster.
type Installer struct {
	Root    string // repository root: its deploy/ and hack/deploy.sh are installed
	Cluster *localcluster.Cluster
	Log     io.Writer
	// Tag is the tag of the webhook, agent, wait and controller images
	// BuildImages writes and Deploy installs; empty means image.DefaultTag,
	// the tag the manifests name.
	Tag string
	// KeysDir holds the approval key pair (created when missing); empty
	// means Root's _output/keys. Two installs that share it (a release and
	// its upgrade) sign and verify with the same keys.
	KeysDir string
	// DeployEnv is added to hack/deploy.sh's environment by Deploy (e.g.
	// the variables that choose how pods are held), after the ones
	// Deploy sets itself.
	DeployEnv []string
	// WithHelm has All install podnet with the Helm chart and the
	// cluster's values file (HelmInstall, release HelmRelease) instead of
	// make deploy; DeployEnv may then hold only what that file says too
	// (HelmCovers).
	WithHelm bool
}

// HelmRelease is the release All installs with Helm.
const HelmRelease = "podnet"

// HelmCovers says whether the local cluster's values file
// (localcluster.HelmValues) installs what make deploy does with env: none,
// or the DRA kubelet plugin, which the file always serves.
func HelmCovers(env []string) bool {
	for _, e := range env {
		if e != "NODE_KUBELET_DIR="+localcluster.NodeKubeletDir {
			return false
		}
	}
	return true
}

// keysDir is where the approval key pair is (KeysDir).
func (in *Installer) keysDir() string {
	if in.KeysDir == "" {
		return filepath.Join(in.Root, "_output", "keys")
	}
	return in.KeysDir
}

func (in *Installer) tag() string {
	if in.Tag == "" {
		return image.DefaultTag
	}
	return in.Tag
}

// Kubectl is the kubectl hack/build-k8s.sh builds.
func (in *Installer) Kubectl() string {
	return filepath.Join(localcluster.BinDir(in.Root), "kubectl")
}

// All builds and imports the images, installs cert-manager and deploys
// podnet (with Helm when in.WithHelm), waiting until the webhook answers and the agents are ready. Each
// stage says what it does, what it waits for and how long it took.
func (in *Installer) All(ctx context.Context) error {
	start := time.Now()
	tarballs, err := in.BuildImages(ctx)
	if err != nil {
		return err
	}
	if err := in.ImportImages(ctx, tarballs); err != nil {
		return err
	}
	err = in.stage("installing cert-manager: CRDs, controller and CA injector, waiting for both rollouts", "usually under 1 min", func() error {
		return in.CertManager(ctx)
	})
	if err != nil {
		return err
	}
	if in.WithHelm {
		if !HelmCovers(in.DeployEnv) {
			return fmt.Errorf("install with Helm: deploy variables %v are make deploy's", in.DeployEnv)
		}
		err = in.HelmInstall(ctx, HelmRelease)
	} else {
		err = in.stage("deploying podnet (make deploy): waiting for the serving certificate, the webhook's caBundle and the rollouts", "usually under 1 min", func() error {
			return in.Deploy(ctx)
		})
	}
	if err != nil {
		return err
	}
	in.logf("podnet deployed after %s", progress.Elapsed(start))
	return nil
}

// ImportImages imports image tarballs (BuildImages) into every node.
func (in *Installer) ImportImages(ctx context.Context, tarballs []string) error {
	return in.stage(fmt.Sprintf("importing %d images into every node of cluster %q", len(tarballs), in.Cluster.Name), "", func() error {
		for _, t := range tarballs {
			if err := in.Cluster.ImportImage(ctx, t); err != nil {
				return fmt.Errorf("import %q into cluster %q: %w", t, in.Cluster.Name, err)
			}
		}
		return nil
	})
}

// BuildImages builds the podnet binaries (as `make build`) and cert-manager
// (hack/cert-manager/build.sh) and writes the webhook, agent, wait,
// controller and cert-manager image tarballs and the busybox workload image, returning
// their paths.
func (in *Installer) BuildImages(ctx context.Context) ([]string, error) {
	bin := filepath.Join(in.Root, "_output", "bin")
	err := in.stage("building the podnet webhook, agent, CNI plugin, wait and controller commands", "about 1 min cold, seconds when cached", func() error {
		for _, pkg := range append([]string{"./cmd/podnet-webhook", "./cmd/podnet-controller"}, image.AgentCommands...) {
			if err := image.BuildGoBinary(ctx, in.Root, pkg, filepath.Join(bin, filepath.Base(pkg))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = in.stage("building cert-manager from its Go module", "about 5 min cold, seconds when cached", func() error {
		if err := in.run(ctx, nil, filepath.Join(in.Root, "hack", "cert-manager", "build.sh")); err != nil {
			return fmt.Errorf("build cert-manager: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var paths, test map[string]string
	err = in.stage("writing the webhook, agent, wait, controller, cert-manager and busybox images", "", func() error {
		cm := filepath.Join(in.Root, "_output", "cert-manager", "bin", "cert-manager")
		var err error
		paths, err = image.WriteSpecs(filepath.Join(in.Root, image.ImagesDir),
			append(image.ComponentSpecs(bin, in.tag()),
				image.BinarySpec(CertManagerImage, cm, certManagerBinary, image.NonRootUser))...)
		if err != nil {
			return fmt.Errorf("write images: %w", err)
		}
		// The busybox workload image for samples and tests (the cluster
		// itself imports only its pause image).
		if test, err = image.EnsureTestImages(ctx, in.Root); err != nil {
			return fmt.Errorf("write test images: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ref := func(short string) string { return paths[image.Ref(short, in.tag())] }
	return []string{ref(image.WebhookName), ref(image.AgentName), ref(image.WaitName), ref(image.ControllerName), paths[CertManagerImage], test[image.BusyboxImage]}, nil
}

// CertManager applies cert-manager's CRDs (server-side: the issuer CRDs
// exceed the client-side last-applied annotation) and its controllers, and
// waits until both run.
func (in *Installer) CertManager(ctx context.Context) error {
	crds := filepath.Join(in.Root, "_output", "cert-manager", "crds")
	if err := in.KubectlRun(ctx, "apply", "--server-side", "--field-manager=podnet-install", "-f", crds); err != nil {
		return fmt.Errorf("install cert-manager: %w", err)
	}
	if err := in.waitEstablished(ctx, "certificates.cert-manager.io", "certificaterequests.cert-manager.io",
		"issuers.cert-manager.io", "clusterissuers.cert-manager.io"); err != nil {
		return fmt.Errorf("install cert-manager: %w", err)
	}
	steps := [][]string{
		{"apply", "-k", filepath.Join(in.Root, "hack", "cert-manager", "deploy")},
		{"-n", "cert-manager", "rollout", "status", "deployment/cert-manager", "--timeout=180s"},
		{"-n", "cert-manager", "rollout", "status", "deployment/cert-manager-cainjector", "--timeout=180s"},
	}
	for _, s := range steps {
		if err := in.KubectlRun(ctx, s...); err != nil {
			return fmt.Errorf("install cert-manager: %w", err)
		}
	}
	return nil
}

// waitEstablished waits up to a minute until the API server serves each
// CRD. `kubectl wait --for=condition=Established` fails at once, rather
// than waiting, on a CRD whose status has no conditions yet (right after
// its create), so a failed wait is tried again until the deadline.
func (in *Installer) waitEstablished(ctx context.Context, crds ...string) error {
	args := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, c := range crds {
		args = append(args, "crd/"+c)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		err := in.KubectlRun(ctx, args...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Deploy runs hack/deploy.sh (`make deploy`) against the cluster, with the
// local overlay pointed at the cluster's containerd sockets, and attaching
// at sandbox setup when the cluster chains podnet's CNI plugin.
func (in *Installer) Deploy(ctx context.Context) error {
	env := []string{
		"KUBECTL=" + in.Kubectl(),
		"NODE_CRI_DIR=" + in.Cluster.Dir,
		"PATH=" + localcluster.BinDir(in.Root) + ":" + os.Getenv("PATH"),
	}
	if in.Tag != "" {
		env = append(env, "IMAGE_TAG="+in.Tag)
	}
	if in.KeysDir != "" {
		env = append(env, "KEYS_DIR="+in.KeysDir)
	}
	if in.Cluster.AttachAtSandboxSetup {
		env = append(env,
			"NODE_CNI_BIN_DIR="+filepath.Join(in.Cluster.Dir, localcluster.CNIBinDirName),
			"NODE_CNI_SOCKET="+localcluster.NodeCNISocket)
	}
	env = append(env, in.DeployEnv...)
	if err := in.run(ctx, env, filepath.Join(in.Root, "hack", "deploy.sh")); err != nil {
		return fmt.Errorf("make deploy: %w", err)
	}
	return nil
}

// KubectlRun runs kubectl against the cluster with its output in the log.
func (in *Installer) KubectlRun(ctx context.Context, args ...string) error {
	return in.run(ctx, nil, in.Kubectl(), args...)
}

// KubectlOutput runs kubectl against the cluster and returns its stdout.
func (in *Installer) KubectlOutput(ctx context.Context, args ...string) (string, error) {
	return in.output(ctx, in.Kubectl(), args...)
}

// output runs a command against the cluster and returns its stdout, or an
// error carrying its stderr.
func (in *Installer) output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := in.command(ctx, nil, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func (in *Installer) run(ctx context.Context, env []string, name string, args ...string) error {
	cmd := in.command(ctx, env, name, args...)
	cmd.Stdout, cmd.Stderr = in.log(), in.log()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", filepath.Base(name), strings.Join(args, " "), err)
	}
	return nil
}

func (in *Installer) command(ctx context.Context, env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = in.Root
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+in.Cluster.Kubeconfig), env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (in *Installer) log() io.Writer {
	if in.Log == nil {
		return io.Discard
	}
	return in.Log
}

// stage runs f as one announced stage of the install (hack/progress).
func (in *Installer) stage(what, expect string, f func() error) error {
	return progress.Stage(in.log(), "install: "+what, expect, f)
}

func (in *Installer) logf(format string, args ...any) {
	fmt.Fprintf(in.log(), "install: "+format+"\n", args...)
}
