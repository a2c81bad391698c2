package dataplane

import (
	"context"
	"net"
	"slices"
	"testing"

	"podnet.io/podnet/pkg/portsecurity"
	"podnet.io/podnet/test/netnstest"
)

// bridgeTables lists the bridge-family nftables tables of a node.
func bridgeTables(t *testing.T, node string) []string {
	t.Helper()
	return netnstest.BridgeTables(t, nodeTable(t, node).NetNS)
}

// TestRootRemoveNodeLeavesNothing: with pods still attached on a plain
// bridge, a VXLAN-spanned bridge and an uplink-spanned bridge, and an
// admin's veth put into one podnet bridge by hand, RemoveNode removes
// every podnet link of the node (host veth ends, bridges, the VXLAN
// device) and the port-security table; the data NIC that was an uplink
// and the admin's veth are released, never deleted.
func TestRootRemoveNodeLeavesNothing(t *testing.T) {
	s := newSpanNodes(t)
	d, node := s.d[0], s.node[0]
	_, plain := newPod(t)
	apply(t, d, twoBridgeNets(t, plain, 3))
	_, overlay := newPod(t)
	apply(t, d, overlayPod(t, overlay, 0, 4, 1))
	_, up := newPod(t)
	apply(t, d, uplinkPod(t, up, 1))
	run(t, "ip", "-n", node, "link", "add", "admin0", "type", "veth", "peer", "name", "admin1")
	run(t, "ip", "-n", node, "link", "set", "admin0", "master", "pnbr-a")
	if !slices.Contains(bridgeTables(t, node), portsecurity.TableName) {
		t.Fatal("no port-security table while pods are attached: the check below would prove nothing")
	}
	before := linkNames(t, node)

	removed, err := d.RemoveNode(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := linkNames(t, node), []string{"admin0", "admin1", "data0", "under0"}; !slices.Equal(got, want) {
		t.Fatalf("node links after RemoveNode: %v, want %v (before: %v, removed: %v)", got, want, before, removed)
	}
	for _, name := range []string{"data0", "admin0"} {
		if m := mustLink(t, node, name).Attrs().MasterIndex; m != 0 {
			t.Errorf("%s still has a master (%d)", name, m)
		}
	}
	if tables := bridgeTables(t, node); slices.Contains(tables, portsecurity.TableName) {
		t.Errorf("port-security table left: %v", tables)
	}
	// Again: nothing to do, no error.
	if removed, err := d.RemoveNode(context.Background()); err != nil || len(removed) != 0 {
		t.Fatalf("second RemoveNode: removed %v, %v", removed, err)
	}
}

// TestRootRemoveNodeTakesVLANSubinterfaces: with a VLAN pod attached, the
// node's VLAN bridge and its 802.1Q subinterface go, and the NIC stays.
func TestRootRemoveNodeTakesVLANSubinterfaces(t *testing.T) {
	requireKernel(t, "veth", "bridge", "8021q")
	d, node := newNode(t)
	parent, _ := addOutside(t, node)
	_, p := newPod(t)
	p.Interfaces = []Interface{{Name: "net1", Kind: KindVLAN, Master: parent, VLAN: 120, Addresses: []net.IPNet{cidr(t, "192.168.72.1/24")}}}
	apply(t, d, p)
	if !hasLink(t, node, vlanUplinkName(parent, 120)) {
		t.Fatalf("no VLAN subinterface while the pod is attached: %v", linkNames(t, node))
	}
	if _, err := d.RemoveNode(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := linkNames(t, node); !slices.Equal(got, []string{parent}) {
		t.Fatalf("node links after RemoveNode: %v, want only %s", got, parent)
	}
}
