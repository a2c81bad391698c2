package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	mnpv1beta1 "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// Env is a running API server with podnet's CRDs.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a controller-runtime client with podnet's types registered.
	Client client.Client
	// Scheme knows the built-in types and podnet's.
	Scheme *runtime.Scheme
	// Env is the underlying envtest environment (for AddUser, webhook options).
	Env *envtest.Environment
	// Root is the repository root.
	Root string
}

// Options tune Start.
type Options struct {
	// WebhookInstallOptions are passed to envtest unchanged, so a test can
	// serve admission webhooks from its own process.
	WebhookInstallOptions envtest.WebhookInstallOptions
}

// RepoRoot returns the repository root: the nearest parent folder of the
// working directory that holds podnet's go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("getwd: %v", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module podnet.io/podnet\n")) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("no podnet go.mod above the working directory")
		}
		dir = parent
	}
}

// Start starts etcd and kube-apiserver with podnet's CRDs from deploy/crd
// and stops them when the test ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	e, stop, err := start(RepoRoot(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	return e
}

// start starts etcd and kube-apiserver with podnet's CRDs and returns
// them with what stops them, by their PIDs.
func start(root string, opts Options) (*Env, func() error, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "_output", "envtest")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, nil, fmt.Errorf("envtest binary %s missing in %s: run `make envtest-assets` (%w)", bin, assets, err)
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	if err := podnetv1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	if err := mnpv1beta1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "deploy", "crd"), filepath.Join(root, "deploy", "crd", "multinetworkpolicy")},
		ErrorIfCRDPathMissing: true,
		WebhookInstallOptions: opts.WebhookInstallOptions,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may fail after etcd and the API server are up (a CRD the
		// server refuses): stop what it started, by its PIDs, before failing.
		return nil, nil, errors.Join(fmt.Errorf("start envtest: %w", err), env.Stop())
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("client: %w", err), env.Stop())
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, Env: env, Root: root}, env.Stop, nil
}

// StartControllerManager runs the real kube-controller-manager (built by
// hack/build-k8s.sh) against the API server with the given controllers, for
// example "garbagecollector", "replicaset", "deployment". It is stopped by
// PID when the test ends.
func (e *Env) StartControllerManager(t testing.TB, controllers ...string) {
	t.Helper()
	bin := filepath.Join(e.Root, "_output", "k8s", "bin", "kube-controller-manager")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("kube-controller-manager missing: run `make k8s` (%v)", err)
	}
	path := e.AdminKubeconfig(t, "kube-controller-manager")
	dir := filepath.Dir(path)
	list := "serviceaccount-token"
	for _, c := range controllers {
		list += "," + c
	}
	log, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		t.Fatalf("log file: %v", err)
	}
	t.Cleanup(func() { log.Close() })
	cmd := exec.Command(bin,
		"--kubeconfig="+path,
		"--authentication-kubeconfig="+path,
		"--authorization-kubeconfig="+path,
		"--controllers="+list,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--use-service-account-credentials=false",
		// The garbage collector and ReplicaSets react within a second or
		// two instead of the default sync periods.
		"--concurrent-gc-syncs=5",
		"--v=1",
	)
	cmd.Stdout, cmd.Stderr = log, log
	StartProcess(t, cmd, 10*time.Second, func() {
		out, _ := os.ReadFile(log.Name())
		t.Logf("kube-controller-manager log (tail):\n%s", Tail(string(out), 4000))
	})
}

// Eventually polls check every 100 ms until it returns nil or the timeout
// passes, then fails the test with the last error.
func Eventually(t testing.TB, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The last check may fail only because the deadline cut it short:
	// the last error of a check that ran in time says more.
	var last, inTime error
	for {
		if last = check(ctx); last == nil {
			return
		}
		if ctx.Err() == nil {
			inTime = last
		}
		select {
		case <-ctx.Done():
			if inTime != nil && inTime != last {
				t.Fatalf("%s: not true after %s: %v (the last check in time: %v)", what, timeout, last, inTime)
			}
			t.Fatalf("%s: not true after %s: %v", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
