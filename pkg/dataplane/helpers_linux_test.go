package dataplane

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/netnstest"
)

var (
	requireRoot = netnstest.RequireRoot
	randomHex   = netnstest.RandomHex
	run         = netnstest.Run
)

// newNetNS creates a throwaway named netns and removes it when the test ends.
func newNetNS(t testing.TB, role string) (name, path string) {
	return netnstest.NewNetNS(t, "pntest", role)
}

// newNode returns a Dataplane working on a throwaway "node" netns, so no
// test touches the machine's own netns.
func newNode(t testing.TB) (*Dataplane, string) {
	t.Helper()
	requireRoot(t)
	name, path := newNetNS(t, "node")
	d := &Dataplane{HostNetNS: path}
	t.Cleanup(d.Close)
	return d, name
}

// newPod returns a throwaway pod netns and a fresh pod UID.
func newPod(t testing.TB) (name string, p Pod) {
	t.Helper()
	name, path := newNetNS(t, "pod")
	return name, Pod{UID: "uid-" + randomHex(8), NetNS: path}
}

// handle opens a netlink handle in a named netns for the test's own checks.
func handle(t testing.TB, nsName string) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromName(nsName)
	if err != nil {
		t.Fatalf("open netns %s: %v", nsName, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", nsName, err)
	}
	t.Cleanup(h.Close)
	return h
}

// snapshot is everything a second apply must leave as it was: every link
// with its index, flags, MTU, MAC, alias and master, every address, and
// every main-table route.
func snapshot(t testing.TB, nsName string) string {
	t.Helper()
	h := handle(t, nsName)
	var lines []string
	links, err := nldump.Links(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		a := l.Attrs()
		// Carrier (running) follows the link asynchronously; it is the
		// kernel's, not podnet's.
		flags := a.Flags &^ net.FlagRunning
		lines = append(lines, fmt.Sprintf("link %d %s %s flags=%v mtu=%d mac=%s alias=%q master=%d group=%d", a.Index, a.Name, l.Type(), flags, a.MTU, a.HardwareAddr, a.Alias, a.MasterIndex, a.Group))
	}
	addrs, err := nldump.Addrs(h, nil, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if kernelLinkLocal(a) {
			continue
		}
		lines = append(lines, fmt.Sprintf("addr %d %s flags=%d", a.LinkIndex, a.IPNet, a.Flags))
	}
	routes, err := nldump.Retry(func() ([]netlink.Route, error) { return h.RouteList(nil, netlink.FAMILY_ALL) })
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Protocol == unix.RTPROT_KERNEL && r.Dst != nil && r.Dst.String() == linkLocalPrefix {
			continue // comes and goes with the kernel's link-local address
		}
		lines = append(lines, fmt.Sprintf("route %d %s via %s proto %d", r.LinkIndex, r.Dst, r.Gw, r.Protocol))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// linkLocalPrefix is the route the kernel adds with a link's IPv6
// link-local address.
const linkLocalPrefix = "fe80::/64"

// kernelLinkLocal reports an IPv6 link-local address, which only the
// kernel makes here (podnet refuses to add one). The kernel adds it from its
// link watch work once the link has carrier, which can be after Apply
// returned: it is the kernel's, not podnet's, and podnet neither adds nor
// reports it, so the snapshot leaves it out, as it leaves out carrier.
func kernelLinkLocal(a netlink.Addr) bool {
	return a.IP.To4() == nil && a.IP.IsLinkLocalUnicast()
}

// linkNames lists the links of a netns, without lo.
func linkNames(t testing.TB, nsName string) []string {
	t.Helper()
	links, err := nldump.Links(handle(t, nsName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range links {
		if l.Attrs().Name != "lo" {
			names = append(names, l.Attrs().Name)
		}
	}
	slices.Sort(names)
	return names
}

func mustLink(t testing.TB, nsName, name string) netlink.Link {
	t.Helper()
	l, err := handle(t, nsName).LinkByName(name)
	if err != nil {
		t.Fatalf("link %q in %s: %v", name, nsName, err)
	}
	return l
}

func cidr(t testing.TB, s string) net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	n.IP = ip
	if v4 := ip.To4(); v4 != nil {
		n.IP = v4
	}
	return *n
}

func network(t testing.TB, s string) net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return *n
}

// pingAttempts bounds ping's echo requests. A link that just came up drops
// what it sends until the kernel's link watch work has activated its queue,
// and the first ARP or neighbour solicitation is then lost; the kernel
// retries it only a second later.
const pingAttempts = 3

// ping sends up to pingAttempts echo requests from a netns, one second
// apart, and reports whether a reply came.
func ping(t testing.TB, nsName, ip string) bool {
	t.Helper()
	for range pingAttempts {
		if pingOnce(t, nsName, ip) {
			return true
		}
	}
	return false
}

// pingOnce sends one echo request; it reports whether a reply came within
// a second.
func pingOnce(t testing.TB, nsName, ip string) bool {
	t.Helper()
	cmd := "ping"
	if strings.Contains(ip, ":") {
		cmd = "ping6"
	}
	return exec.Command("ip", "netns", "exec", nsName, "busybox", cmd, "-c", "1", "-W", "1", ip).Run() == nil
}

func apply(t testing.TB, d *Dataplane, p Pod) []InterfaceStatus {
	t.Helper()
	st, err := d.Apply(context.Background(), p)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return st
}

// requireNoSteps asserts that the planner has nothing left to do.
func requireNoSteps(t testing.TB, d *Dataplane, p Pod) {
	t.Helper()
	steps, err := d.Plan(context.Background(), p)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if len(steps) != 0 {
		t.Fatalf("plan after apply: want no steps, got %d: %v", len(steps), steps)
	}
}

// requireIdempotent applies p again and asserts the planner had nothing to
// do and neither netns changed.
func requireIdempotent(t testing.TB, d *Dataplane, p Pod, nss ...string) {
	t.Helper()
	requireNoSteps(t, d, p)
	before := map[string]string{}
	for _, ns := range nss {
		before[ns] = snapshot(t, ns)
	}
	apply(t, d, p)
	for _, ns := range nss {
		if after := snapshot(t, ns); after != before[ns] {
			t.Fatalf("second apply changed netns %s:\nbefore:\n%s\nafter:\n%s", ns, before[ns], after)
		}
	}
}

// eventually retries a check for a short while: the kernel tears down a
// deleted netns' links asynchronously.
func eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// requireMentions asserts that err says all of wants.
func requireMentions(t testing.TB, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error mentioning %q", wants)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %q", err, want)
		}
	}
}
