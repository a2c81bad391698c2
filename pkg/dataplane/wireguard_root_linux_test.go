package dataplane

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// outsideWireGuard makes the outside peer: wg0 on 10.70.0.1/24 listening
// on 51820, with the pod's public key as its one peer.
func outsideWireGuard(t *testing.T, out, podKey string) wgtypes.Key {
	t.Helper()
	h := handle(t, out)
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "wg0"
	if err := h.LinkAdd(&netlink.Wireguard{LinkAttrs: attrs}); err != nil {
		t.Fatalf("outside wg0 (needs the wireguard module): %v", err)
	}
	key, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := wgtypes.ParseKey(podKey)
	if err != nil {
		t.Fatalf("pod public key %q: %v", podKey, err)
	}
	port := 51820
	err = withWireGuard(nsHandle(t, out), func(c *wgctrl.Client) error {
		return c.ConfigureDevice("wg0", wgtypes.Config{PrivateKey: &key, ListenPort: &port, ReplacePeers: true,
			Peers: []wgtypes.PeerConfig{{PublicKey: peer, AllowedIPs: []net.IPNet{cidr(t, "10.70.0.2/32")}}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", out, "addr", "add", "10.70.0.1/24", "dev", "wg0")
	run(t, "ip", "-n", out, "link", "set", "wg0", "up")
	return key
}

// TestRootWireGuardTunnel passes traffic between a pod and a peer outside
// the cluster through a WireGuard tunnel whose socket is on the node. The
// pod's key pair is made by the dataplane, its public key reported and
// read back from the device by a restarted agent; a new peer endpoint is
// set in place, keeping the key; Detach leaves nothing on the node.
func TestRootWireGuardTunnel(t *testing.T) {
	d, node := newNode(t)
	requireKernel(t, "wireguard")
	out := outside(t, node)
	nodeBefore := snapshot(t, node)
	pod, p := newPod(t)
	// The outside's key is not known yet: any valid key first, the real
	// one once the outside knows the pod's.
	placeholder, _ := wgtypes.GeneratePrivateKey()
	p.Interfaces = []Interface{{
		Name: "net1", Kind: KindWireGuard, Addresses: []net.IPNet{cidr(t, "10.70.0.2/24")},
		Tunnel: &Tunnel{Remote: netip.MustParseAddrPort("10.99.0.2:51820"), PeerPublicKey: placeholder.PublicKey().String(),
			AllowedIPs: []net.IPNet{network(t, "10.70.0.0/24")}},
	}}
	st := apply(t, d, p)
	if len(st) != 1 || st[0].PublicKey == "" || st[0].MTU != defaultWireGuardMTU {
		t.Fatalf("status %+v", st)
	}
	podKey := st[0].PublicKey
	outKey := outsideWireGuard(t, out, podKey)
	index := mustLink(t, pod, "net1").Attrs().Index
	p.Interfaces[0].Tunnel.PeerPublicKey = outKey.PublicKey().String()
	st = apply(t, d, p)
	if st[0].PublicKey != podKey || mustLink(t, pod, "net1").Attrs().Index != index {
		t.Fatalf("a new peer changed the device or its key: %+v", st)
	}
	requireNoRouteTo(t, pod, "10.99.0.2")
	if got := snapshot(t, node); got != nodeBefore {
		t.Fatalf("the node gained links:\nbefore:\n%s\nafter:\n%s", nodeBefore, got)
	}
	if !ping(t, pod, "10.70.0.1") {
		t.Fatal("pod cannot reach the outside peer through the wireguard tunnel")
	}
	if ports := udpPorts(t, pod); ports != "" {
		t.Fatalf("a socket in the pod netns: %s", ports)
	}
	if ports := udpPorts(t, node); ports == "" {
		t.Fatal("no socket on the node")
	}
	requireIdempotent(t, d, p, pod, node)

	// A restarted agent reads the key back from the device.
	again := &Dataplane{HostNetNS: d.HostNetNS}
	t.Cleanup(again.Close)
	requireNoSteps(t, again, p)
	if st, err := again.Observe(context.Background(), p); err != nil || len(st) != 1 || st[0].PublicKey != podKey {
		t.Fatalf("after restart: %+v, %v (want key %s)", st, err, podKey)
	}

	if err := d.Detach(context.Background(), p.UID, p.NetNS); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, pod); len(got) != 0 {
		t.Fatalf("pod after detach: %v", got)
	}
	if got := snapshot(t, node); got != nodeBefore {
		t.Fatalf("the node changed:\nbefore:\n%s\nafter:\n%s", nodeBefore, got)
	}
	if ports := udpPorts(t, node); ports != "" {
		t.Fatalf("a socket left on the node: %s", ports)
	}
}

// TestRootWireGuardKeyUnreadableWithoutNetAdmin: a process in the pod's
// netns without CAP_NET_ADMIN (a non-root uid, as in an unprivileged pod)
// cannot read the device, so cannot read its private key; the same
// process as root can (the control).
func TestRootWireGuardKeyUnreadableWithoutNetAdmin(t *testing.T) {
	d, node := newNode(t)
	requireKernel(t, "wireguard")
	outside(t, node)
	_, p := newPod(t)
	peer, _ := wgtypes.GeneratePrivateKey()
	p.Interfaces = []Interface{{Name: "net1", Kind: KindWireGuard, Addresses: []net.IPNet{cidr(t, "10.70.0.2/24")},
		Tunnel: &Tunnel{Remote: netip.MustParseAddrPort("10.99.0.2:51820"), PeerPublicKey: peer.PublicKey().String()}}}
	apply(t, d, p)
	read := func(uid string) (string, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "PODNET_WG_READ_NETNS="+p.NetNS, "PODNET_WG_READ_UID="+uid)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := read("0"); err != nil || !strings.Contains(out, "private key read") {
		t.Fatalf("control: root in the pod netns cannot read the device: %v\n%s", err, out)
	}
	out, err := read("65534")
	if err == nil || strings.Contains(out, "private key read") {
		t.Fatalf("uid 65534 without NET_ADMIN read the device: %v\n%s", err, out)
	}
	if !strings.Contains(out, "operation not permitted") {
		t.Fatalf("uid 65534: want a permission error, got:\n%s", out)
	}
}

// TestMain runs the package's tests, or, in the child process of
// TestRootWireGuardKeyUnreadableWithoutNetAdmin (its environment set),
// only wireGuardRead: a helper, not a test that passes.
func TestMain(m *testing.M) {
	if path := os.Getenv("PODNET_WG_READ_NETNS"); path != "" {
		if err := wireGuardRead(path, os.Getenv("PODNET_WG_READ_UID")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("private key read")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// wireGuardRead joins the netns, drops to the uid (which clears every
// capability) and reads net1 with wgctrl, private key included.
func wireGuardRead(path, uid string) error {
	runtime.LockOSThread()
	ns, err := netns.GetFromPath(path)
	if err == nil {
		err = netns.Set(ns)
	}
	if err != nil {
		return err
	}
	var id int
	fmt.Sscan(uid, &id)
	if id != 0 {
		if err := syscall.Setresuid(id, id, id); err != nil {
			return err
		}
	}
	c, err := wgctrl.New()
	if err != nil {
		return err
	}
	defer c.Close()
	dev, err := c.Device("net1")
	switch {
	case err != nil:
		return fmt.Errorf("read net1: %w", err)
	case dev.PrivateKey == wgtypes.Key{}:
		return fmt.Errorf("device read without its private key")
	}
	return nil
}
