package portsecurity

import (
	"net"
	"slices"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
)

// TestRootLastingConn writes and removes ports' rules through one lasting
// connection: it writes what it has not written, a change made beside it
// is seen once Ports reads the table again, it goes on after a failed
// call, and after Close it opens a new socket and reads the table.
func TestRootLastingConn(t *testing.T) {
	ns, err := netns.GetFromName(newNetNS(t, "conn"))
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	table := Table{NetNS: int(ns)}
	c := table.Lasting()
	defer c.Close()
	plan := func(port string) Plan {
		pl, err := PlanPort(Port{Name: port, MAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, Addresses: []net.IP{net.IPv4(10, 0, 0, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	ensure := func(pl Plan, want bool) {
		t.Helper()
		if changed, err := c.Ensure(pl); err != nil || changed != want {
			t.Fatalf("Ensure(%s) = %v, %v; want %v, nil", pl.Port, changed, err, want)
		}
	}
	ensure(plan("pnconna"), true)
	ensure(plan("pnconna"), false)

	if _, err := c.Ensure(Plan{Port: "pnconnx"}); err == nil {
		t.Fatal("Ensure of a plan without fingerprint succeeded")
	}
	ensure(plan("pnconnb"), true)

	// Removed beside the connection: seen by Ports, then written again.
	if err := table.Remove("pnconna"); err != nil {
		t.Fatal(err)
	}
	if ports, err := c.Ports(); err != nil || !slices.Equal(ports, []string{"pnconnb"}) {
		t.Fatalf("Ports after a removal beside the connection = %v, %v; want only pnconnb", ports, err)
	}
	ensure(plan("pnconna"), true)
	ensure(plan("pnconna"), false)

	// Only its name taken out of the secured set beside the connection:
	// the rest of its elements are no whole plan, and it is written again.
	nc, err := nftables.New(nftables.WithNetNSFd(int(ns)))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.SetDeleteElements(securedSet, []nftables.SetElement{{Key: ifname("pnconna")}}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ports(); err != nil {
		t.Fatal(err)
	}
	ensure(plan("pnconna"), true)

	c.Close()
	if ports, err := c.Ports(); err != nil || !slices.Equal(ports, []string{"pnconna", "pnconnb"}) {
		t.Fatalf("Ports after Close = %v, %v; want both ports", ports, err)
	}
	if err := c.Remove("pnconna", "pnconnb"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(); err != nil {
		t.Fatal(err)
	}
	if ports, err := table.Ports(); err != nil || len(ports) != 0 {
		t.Fatalf("ports after Remove and Delete = %v, %v; want none", ports, err)
	}
}
