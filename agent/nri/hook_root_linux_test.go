package nri_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	agentnri "podnet.io/podnet/agent/nri"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/netnstest"
	"podnet.io/podnet/test/testenv"
)

// TestRootWaitHookHoldsTheContainer runs podnet's NRI plugin with its wait
// hook (the real podnet-wait) against a real containerd 2 and a real
// CRI-O, for a podnet pod whose attach never answers: the runtime creates
// the container with the hook, which holds the kubelet's CreateContainer
// (CRI-O) or StartContainer (containerd) while net1 is absent from the
// pod's netns, three seconds and more; once net1 is there and up, the
// call returns and the container runs. No refusal, no retry.
func TestRootWaitHookHoldsTheContainer(t *testing.T) {
	netnstest.RequireRoot(t)
	root := testenv.RepoRoot(t)
	hook := filepath.Join(t.TempDir(), "podnet-wait")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := image.BuildGoBinary(ctx, root, image.WaitCommand, hook); err != nil {
		t.Fatal(err)
	}
	for _, rt := range []string{localcluster.RuntimeContainerd2, localcluster.RuntimeCRIO} {
		t.Run(rt, func(t *testing.T) { testWaitHook(t, root, rt, hook) })
	}
}

// pendingAttach is an attach under way that never answers.
type pendingAttach struct{ netns string }

func (a pendingAttach) Interfaces() []string { return []string{"net1"} }
func (a pendingAttach) NetNS() string        { return a.netns }
func (a pendingAttach) Await(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}
func (pendingAttach) Again() {}
func (pendingAttach) Close() {}

type pendingAttacher struct{}

func (pendingAttacher) Start(_ context.Context, req cnisocket.Request) (agentnri.Attach, error) {
	return pendingAttach{netns: req.NetNS}, nil
}

func testWaitHook(t *testing.T, root, runtime, hook string) {
	c := critest.StartWith(t, root, critest.Options{Runtime: runtime})
	c.ConnectNRI(t, &agentnri.Plugin{Attacher: pendingAttacher{}, CreateWait: 10 * time.Millisecond,
		Hook: hook, HookTimeout: time.Minute, Log: testr.New(t)})
	ctx := context.Background()
	sb, uid, ann := podnetSandbox(ctx, t, c)
	s, err := cri.Resolver{Runtime: c.Runtime}.Sandbox(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() { created <- createApp(ctx, c, sb, uid, ann) }()
	select {
	case err := <-created:
		t.Fatalf("the container was created and started (err %v) with net1 absent; the hook should hold it", err)
	case <-time.After(3 * time.Second):
	}
	ns, err := netns.GetFromPath(s.NetNS)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "net1"}, PeerName: "net1p"}
	if err := h.LinkAdd(link); err != nil {
		t.Fatal(err)
	}
	if err := h.LinkSetUp(link); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("create and start the container once net1 is up: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the container is still held a minute after net1 came up")
	}
}

// podnetSandbox runs the sandbox of a podnet pod held with NRI (its
// approval is never read: the plugin's attacher stands in) and returns its
// id, the pod's uid and its annotations.
func podnetSandbox(ctx context.Context, t *testing.T, c *critest.CRI) (sb, uid string, ann map[string]string) {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	uid = "pntest-" + hex.EncodeToString(b)
	ann = map[string]string{v1alpha1.ApprovedAnnotation: "approval", v1alpha1.NRIRequiredPluginsAnnotation: v1alpha1.NRIRequiredPluginsValue}
	sb, err := c.RunSandboxAnnotated(ctx, "tenant", "hooked", uid, ann)
	if err != nil {
		t.Fatal(err)
	}
	return sb, uid, ann
}

// createApp creates and starts a container "app" in podnet pod uid's
// sandbox sb, as the kubelet does.
func createApp(ctx context.Context, c *critest.CRI, sb, uid string, ann map[string]string) error {
	resp, err := c.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: image.PauseImage, UserSpecifiedImage: image.PauseImage},
			Labels:   map[string]string{cri.PodUIDLabel: uid, "io.kubernetes.container.name": "app"},
		},
		SandboxConfig: &runtimeapi.PodSandboxConfig{
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: "hooked", Namespace: "tenant", Uid: uid},
			Annotations: ann,
			Labels:      map[string]string{cri.PodUIDLabel: uid},
			Linux:       &runtimeapi.LinuxPodSandboxConfig{},
		},
	})
	if err != nil {
		return err
	}
	_, err = c.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()})
	return err
}

// TestRootWaitHookRejectedByTheValidator: where an admin has NRI's
// default validator reject OCI hook adjustments
// (reject_oci_hook_adjustment), a container podnet's plugin would hold
// with its wait hook is refused by the runtime, on containerd 2 and on
// CRI-O: no container runs without its interfaces, and the kubelet
// creates it again, as when the plugin refuses it.
func TestRootWaitHookRejectedByTheValidator(t *testing.T) {
	netnstest.RequireRoot(t)
	root := testenv.RepoRoot(t)
	for _, rt := range []string{localcluster.RuntimeContainerd2, localcluster.RuntimeCRIO} {
		t.Run(rt, func(t *testing.T) {
			c := critest.StartWith(t, root, critest.Options{Runtime: rt, NRIDefaultValidator: true, NRIRejectOCIHooks: true})
			// The hook is never run: the validator rejects the adjustment
			// that names it.
			c.ConnectNRI(t, &agentnri.Plugin{Attacher: pendingAttacher{}, CreateWait: 10 * time.Millisecond,
				Hook: "/nonexistent/podnet-wait", HookTimeout: time.Minute, Log: testr.New(t)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			sb, uid, ann := podnetSandbox(ctx, t, c)
			err := createApp(ctx, c, sb, uid, ann)
			if err == nil || !strings.Contains(err.Error(), "OCI hook") {
				t.Fatalf("create and start the container: %v; want the validator's refusal of the OCI hook", err)
			}
			t.Logf("refused: %v", err)
			list, err := c.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: sb}})
			if err != nil {
				t.Fatal(err)
			}
			for _, ctr := range list.GetContainers() {
				if ctr.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
					t.Errorf("container %s runs", ctr.GetId())
				}
			}
		})
	}
}
