package critest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/test/testenv"
)

// CRI is a running container runtime (containerd or CRI-O) serving CRI.
type CRI struct {
	// Socket is the path of its gRPC unix socket (the CRI endpoint).
	Socket string
	// Runtime is a CRI runtime client connected to Socket.
	Runtime runtimeapi.RuntimeServiceClient
	// NetNS is the name of the throwaway network namespace it runs in.
	NetNS string
	// Kind is the runtime it is (Options.Runtime; "" is containerd 1.6).
	Kind string
	// paths are where it keeps everything.
	paths localcluster.RuntimePaths
}

// Options change the runtime Start runs.
type Options struct {
	// CNIBinDir is containerd's CNI plugin folder; empty means the
	// machine's (localcluster.SystemCNIBinDir).
	CNIBinDir string
	// Chained are plugin entries listed after the sandboxes' bridge in
	// the conflist (e.g. podnet's chained plugin).
	Chained []map[string]any
	// Runtime is localcluster.RuntimeContainerd (Debian's containerd 1.6,
	// the default for ""), localcluster.RuntimeContainerd2 or
	// localcluster.RuntimeCRIO (built from their Go modules first when
	// missing).
	Runtime string
	// NRIRejectOCIHooks, with NRIDefaultValidator, has the validator
	// reject every OCI hook a plugin adds.
	NRIRejectOCIHooks bool
	// NRIDefaultValidator runs NRI's default validator (a runtime that
	// serves NRI).
	NRIDefaultValidator bool
}

// Runtimes are the runtimes the CRI tests run on, each as its own
// subtest: every sandbox lookup must hold on each.
var Runtimes = []string{localcluster.RuntimeContainerd, localcluster.RuntimeContainerd2, localcluster.RuntimeCRIO}

// Start starts containerd 1.6 for the test and stops it, by PID, when the
// test ends, after removing every sandbox still there. root is the podnet
// module root (for building the pause image).
func Start(t testing.TB, root string) *CRI {
	t.Helper()
	return StartWith(t, root, Options{})
}

// StartWith is Start with options.
func StartWith(t testing.TB, root string, o Options) *CRI {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("critest starts a container runtime and network namespaces: run as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tarballs, err := image.EnsureTestImages(ctx, root)
	if err != nil {
		t.Fatalf("test images: %v", err)
	}
	dir, err := os.MkdirTemp("", "pntest-cri-")
	if err != nil {
		t.Fatal(err)
	}
	// Runs last, when the runtime is stopped: a rootfs or shm mount it left
	// must go before the folder, or RemoveAll deletes through it.
	t.Cleanup(func() {
		if err := localcluster.UnmountUnder(dir); err != nil {
			t.Error(err)
		}
		os.RemoveAll(dir)
	})
	bin := runtimeCommand(ctx, t, root, o.Runtime)
	c := &CRI{Socket: filepath.Join(dir, localcluster.NodeCRISocket), NetNS: "pntest-cri-" + randomHex(t, 4), Kind: o.Runtime}
	if out, err := exec.Command("ip", "netns", "add", c.NetNS).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", c.NetNS, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", c.NetNS).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", c.NetNS, err, out)
		}
	})
	cniDir := filepath.Join(dir, "net.d")
	if err := os.MkdirAll(cniDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// containerd 1.6 insists on an eth0 with an address, so the sandbox
	// gets a bridge port; the bridge lives in the runtime's throwaway
	// netns.
	conflist, err := renderCNI(dir, o.Chained)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cniDir, "10-pntest.conflist"), []byte(conflist), 0o644); err != nil {
		t.Fatal(err)
	}
	// The same choice as the local cluster's nodes, so these tests run
	// the runtime as the cluster does.
	snapshotter, note, err := localcluster.ChooseSnapshotter(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("containerd snapshotter %s: %s", snapshotter, note)
	cfg := filepath.Join(dir, "runtime.toml")
	c.paths = localcluster.RuntimePaths{
		Dir: dir, Socket: c.Socket, RuncRoot: filepath.Join(dir, "runc"), CNIConfDir: cniDir, CNIBinDir: o.CNIBinDir,
		NRIDefaultValidator: o.NRIDefaultValidator, NRIRejectOCIHooks: o.NRIRejectOCIHooks,
	}
	config, err := localcluster.RuntimeConfig(root, o.Runtime, c.paths, image.PauseImage, snapshotter)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "runtime.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	// nsenter enters only the network namespace: the sandbox namespaces
	// the runtime pins under /var/run/netns must stay visible to the test.
	cmd := exec.Command("nsenter", "--net=/var/run/netns/"+c.NetNS, "--", bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	t.Cleanup(func() { logFile.Close() })
	proc := testenv.StartProcess(t, cmd, 15*time.Second, func() {
		b, _ := os.ReadFile(logPath)
		t.Logf("%s log (tail):\n%s", o.Runtime, testenv.Tail(string(b), 40000))
	})
	conn, err := grpc.NewClient("unix://"+c.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c.Runtime = runtimeapi.NewRuntimeServiceClient(conn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := c.Runtime.Version(ctx, &runtimeapi.VersionRequest{})
		if err == nil {
			checkVersion(t, o.Runtime, v.GetRuntimeVersion())
			break
		}
		select {
		case <-proc.Done():
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s exited:\n%s", o.Runtime, testenv.Tail(string(b), 40000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer CRI on %s within 30s: %v", o.Runtime, c.Socket, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if localcluster.ServesNRI(o.Runtime) {
		checkNRISocket(t, o.Runtime, filepath.Join(dir, localcluster.NodeNRISocket))
	}
	// Remove sandboxes before the runtime stops (cleanups run
	// last-first), so no shim, conmon or pinned netns outlives the test.
	t.Cleanup(func() { c.removeAll(t) })
	if err := localcluster.ImportInto(ctx, o.Runtime, c.paths, snapshotter, tarballs[image.PauseImage]); err != nil {
		t.Fatalf("import pause image: %v", err)
	}
	return c
}

// runtimeCommand is the command of runtime, building it first when it is
// built from a pin (cached by the pin), so a test on it never finds it
// missing and never skips.
func runtimeCommand(ctx context.Context, t testing.TB, root, runtime string) string {
	t.Helper()
	if err := localcluster.BuildRuntime(ctx, root, runtime, nil); err != nil {
		t.Fatal(err)
	}
	bin, err := localcluster.RuntimeCommand(root, runtime)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// checkVersion fails the test when the runtime that answers is not the
// one asked for (a containerd 1.6 found first on the PATH would make the
// containerd 2 variants test 1.6 again).
func checkVersion(t testing.TB, runtime, version string) {
	t.Helper()
	want, _, err := localcluster.RuntimeVersions(runtime)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, want) {
		t.Fatalf("the runtime answers as version %q, want %s… for runtime %q", version, want, runtime)
	}
}

// checkNRISocket fails the test unless the runtime serves NRI on its own
// socket (Containerd2Config, CRIOConfig), never on the machine's default
// one.
func checkNRISocket(t testing.TB, runtime, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("%s serves no NRI socket at %s: %v (mode %v)", runtime, path, err, st)
	}
}

// renderCNI is the sandboxes' primary network: a bridge with host-local
// addresses whose state stays in dir, then the chained plugins.
func renderCNI(dir string, chained []map[string]any) (string, error) {
	plugins := []any{map[string]any{
		"type": "bridge", "bridge": "pntestbr0",
		"ipam": map[string]any{"type": "host-local", "dataDir": filepath.Join(dir, "cni-ipam"), "ranges": [][]map[string]string{{{"subnet": "10.250.0.0/16"}}}},
	}}
	for _, c := range chained {
		plugins = append(plugins, c)
	}
	b, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "pntest", "plugins": plugins})
	if err != nil {
		return "", fmt.Errorf("encode test conflist: %w", err)
	}
	return string(b), nil
}

// RunSandbox runs a pod sandbox labelled as the kubelet labels them, and
// returns its ID.
func (c *CRI) RunSandbox(ctx context.Context, namespace, name, uid string) (string, error) {
	return c.RunSandboxAnnotated(ctx, namespace, name, uid, nil)
}

// RunSandboxAnnotated is RunSandbox with the pod's annotations, which the
// kubelet passes on to the runtime (and containerd to CNI plugins that
// ask for them).
func (c *CRI) RunSandboxAnnotated(ctx context.Context, namespace, name, uid string, annotations map[string]string) (string, error) {
	resp, err := c.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: name, Namespace: namespace, Uid: uid},
		Annotations: annotations,
		Labels: map[string]string{
			cri.PodUIDLabel:               uid,
			"io.kubernetes.pod.name":      name,
			"io.kubernetes.pod.namespace": namespace,
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{},
	}})
	if err != nil {
		return "", fmt.Errorf("run sandbox for pod %s/%s: %w", namespace, name, err)
	}
	return resp.PodSandboxId, nil
}

// RemoveSandbox stops and removes a sandbox; containerd then deletes its
// network namespace.
func (c *CRI) RemoveSandbox(ctx context.Context, id string) error {
	if _, err := c.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("stop sandbox %q: %w", id, err)
	}
	if _, err := c.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("remove sandbox %q: %w", id, err)
	}
	return nil
}

// removeAll stops and removes every sandbox, each with its own deadline:
// a bench leaves hundreds, and on a loaded machine one shared deadline ran
// out before the last of them.
func (c *CRI) removeAll(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	list, err := c.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	cancel()
	if err != nil {
		t.Errorf("list sandboxes for cleanup: %v", err)
		return
	}
	for _, s := range list.Items {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := c.RemoveSandbox(ctx, s.Id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		cancel()
	}
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
