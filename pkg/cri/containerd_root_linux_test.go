package cri_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/testenv"
)

// TestRootResolveContainerdSandbox runs, on each of critest.Runtimes
// (containerd 1.6, containerd 2 and CRI-O), a real pod sandbox through CRI and resolves the pod's UID to its network
// namespace with a Resolver dialled like the agent dials it, with the
// address the CNI plugin gave the sandbox's eth0 (the pod's IPs, from the
// same status call), and by sandbox id to the pod UID and netns the
// runtime recorded (checkSandboxRecord); then removes the sandbox and sees the UID resolve to
// ErrNoSandbox.
func TestRootResolveContainerdSandbox(t *testing.T) {
	for _, rt := range critest.Runtimes {
		t.Run(rt, func(t *testing.T) { testResolveSandbox(t, rt) })
	}
}

func testResolveSandbox(t *testing.T, runtime string) {
	c, r := startContainerd(t, runtime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	uid := randomUID(t)

	if _, err := r.Sandbox(ctx, uid); !errors.Is(err, cri.ErrNoSandbox) {
		t.Fatalf("before the sandbox: err = %v, want ErrNoSandbox", err)
	}
	before := time.Now()
	id, err := c.RunSandbox(ctx, "ns1", "pod1", uid)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := r.Sandbox(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	if sb.ID != id {
		t.Errorf("sandbox id = %q, want %q", sb.ID, id)
	}
	checkSandboxRecord(ctx, t, runtime, r, id, cri.SandboxRecord{PodUID: uid, NetNS: sb.NetNS})
	if runtime == localcluster.RuntimeContainerd2 {
		// containerd 1.6 keeps no such record in the status (and
		// is not run with NRI here).
		checkNetNSWithoutSpec(ctx, t, r, id, sb.NetNS)
	}
	// containerd names the pinned netns cni-<uuid>, CRI-O <uuid>; both
	// pin it where the agent looks.
	want := "/var/run/netns/cni-"
	if runtime == localcluster.RuntimeCRIO {
		want = "/var/run/netns/"
	}
	if !strings.HasPrefix(sb.NetNS, want) {
		t.Errorf("netns path = %q, want %s's %s…", sb.NetNS, runtime, want)
	}
	if sb.Created.Before(before.Add(-time.Second)) || sb.Created.After(time.Now()) {
		t.Errorf("created = %v, want between %v and now", sb.Created, before)
	}
	// The path is a real namespace, different from ours and containerd's.
	h, err := netns.GetFromPath(sb.NetNS)
	if err != nil {
		t.Fatalf("open %q: %v", sb.NetNS, err)
	}
	defer h.Close()
	self, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	if h.Equal(self) {
		t.Fatalf("sandbox netns %q is the test's own namespace", sb.NetNS)
	}
	if want := eth0IPs(t, h); !slices.Equal(sb.IPs, want) {
		t.Errorf("sandbox IPs = %q, want the addresses of eth0 in its netns %q", sb.IPs, want)
	}

	if err := c.RemoveSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Sandbox(ctx, uid); !errors.Is(err, cri.ErrNoSandbox) {
		t.Fatalf("after removal: err = %v, want ErrNoSandbox", err)
	}
	if _, err := os.Stat(sb.NetNS); !os.IsNotExist(err) {
		t.Errorf("netns %q still there after the sandbox was removed (stat: %v)", sb.NetNS, err)
	}
}

// TestRootPollerSeesContainerdSandboxes waits for three pods with one
// Poller on a real containerd (each of critest.Runtimes), runs the
// sandboxes of two, and sees exactly those two told, while the third
// still waits.
func TestRootPollerSeesContainerdSandboxes(t *testing.T) {
	for _, rt := range critest.Runtimes {
		t.Run(rt, func(t *testing.T) { testPollerSeesSandboxes(t, rt) })
	}
}

func testPollerSeesSandboxes(t *testing.T, runtime string) {
	c, r := startContainerd(t, runtime)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	told := make(chan string, 3)
	p := &cri.Poller{Runtime: r.Runtime, Interval: 20 * time.Millisecond, Appeared: func(uid string) { told <- uid }}
	go func() { _ = p.Start(ctx) }()
	var uids []string
	for range 3 {
		uid := randomUID(t)
		uids = append(uids, uid)
		p.Wait(uid)
	}
	for i, uid := range uids[:2] {
		id, err := c.RunSandbox(ctx, "ns1", "pod"+strconv.Itoa(i), uid)
		if err != nil {
			t.Fatal(err)
		}
		defer c.RemoveSandbox(context.Background(), id)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case uid := <-told:
			got[uid] = true
		case <-ctx.Done():
			t.Fatalf("told %v of the 2 pods whose sandboxes run", got)
		}
	}
	if !got[uids[0]] || !got[uids[1]] || p.Waiting() != 1 {
		t.Fatalf("told %v, %d still waiting; want %v told and 1 waiting", got, p.Waiting(), uids[:2])
	}
}

// startContainerd starts a throwaway containerd (stopped by the test's
// cleanup) and a Resolver dialled to it as the agent dials.
func startContainerd(t *testing.T, runtime string) (*critest.CRI, *cri.Resolver) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("%s starts containerd: run it as root", t.Name())
	}
	c := critest.StartWith(t, testenv.RepoRoot(t), critest.Options{Runtime: runtime})
	r, conn, err := cri.Dial("unix://" + c.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return c, r
}

// eth0IPs lists the global addresses of eth0 in the namespace h, without
// prefix length, read through a netlink handle bound to it.
func eth0IPs(t *testing.T, h netns.NsHandle) []string {
	t.Helper()
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	link, err := nl.LinkByName("eth0")
	if err != nil {
		t.Fatalf("eth0 of the sandbox: %v", err)
	}
	addrs, err := nldump.Addrs(nl, link, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatalf("addresses of eth0: %v", err)
	}
	var out []string
	for _, a := range addrs {
		if a.IP.IsGlobalUnicast() {
			out = append(out, a.IP.String())
		}
	}
	if len(out) == 0 {
		t.Fatal("eth0 of the sandbox has no global address")
	}
	return out
}

func randomUID(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "pntest-" + hex.EncodeToString(b)
}

// checkNetNSWithoutSpec reads the sandbox's verbose status from the real
// containerd 2, drops its runtimeSpec (what a sandbox recovered by a restarted
// containerd 2 may lack) and sees NetNSFromInfo still find the netns, in
// the runtime's stored sandbox metadata.
func checkNetNSWithoutSpec(ctx context.Context, t *testing.T, r *cri.Resolver, id, want string) {
	t.Helper()
	st, err := r.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	var info map[string]json.RawMessage
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil {
		t.Fatalf("verbose status of %s: %v", id, err)
	}
	if _, ok := info["runtimeSpec"]; !ok {
		t.Fatalf("verbose status of %s has no runtimeSpec to drop: keys %v", id, slices.Sorted(maps.Keys(info)))
	}
	delete(info, "runtimeSpec")
	delete(info, "pid")
	stripped, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cri.NetNSFromInfo(map[string]string{"info": string(stripped)})
	if err != nil || got != want {
		t.Fatalf("netns without the spec: %q, %v; want %q from the stored sandbox metadata", got, err, want)
	}
}
