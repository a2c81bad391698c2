package nri_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
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
	p := &agentnri.Plugin{Attacher: pendingAttacher{}, Socket: filepath.Join(filepath.Dir(c.Socket), localcluster.NodeNRISocket),
		CreateWait: 10 * time.Millisecond, Hook: hook, HookTimeout: time.Minute, Log: testr.New(t)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testenv.Eventually(t, 30*time.Second, "podnet's NRI plugin connected", func(context.Context) error {
		if !p.Connected() {
			return fmt.Errorf("not connected to %s", p.Socket)
		}
		return nil
	})

	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	uid := "pntest-" + hex.EncodeToString(b)
	ann := map[string]string{v1alpha1.ApprovedAnnotation: "approval", v1alpha1.NRIRequiredPluginsAnnotation: v1alpha1.NRIRequiredPluginsValue}
	sb, err := c.RunSandboxAnnotated(ctx, "tenant", "hooked", uid, ann)
	if err != nil {
		t.Fatal(err)
	}
	s, err := cri.Resolver{Runtime: c.Runtime}.Sandbox(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
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
		if err == nil {
			_, err = c.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()})
		}
		created <- err
	}()
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
