package dataplane

import (
	"context"
	"encoding/binary"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	mdnetlink "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/pkg/portsecurity"
)

// nodeTable is the port-security table of a test node netns, and its fd.
func nodeTable(t *testing.T, node string) portsecurity.Table {
	t.Helper()
	fd, err := unix.Open(filepath.Join("/run/netns", node), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return portsecurity.Table{NetNS: fd}
}

// securedPorts lists the ports with rules.
func securedPorts(t *testing.T, table portsecurity.Table) []string {
	t.Helper()
	ports, err := table.Ports()
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// requireRulesMatch checks that the rules of an interface's port are those
// planned for its pod link as it is now (MAC, link-local addresses) and
// the desired addresses: writing that plan again changes nothing.
func requireRulesMatch(t *testing.T, table portsecurity.Table, podNS string, p Pod, ifc Interface) {
	t.Helper()
	l := mustLink(t, podNS, ifc.Name)
	port := portsecurity.Port{Name: hostName(p.UID, ifc.Name), MAC: l.Attrs().HardwareAddr}
	for _, a := range ifc.Addresses {
		port.Addresses = append(port.Addresses, a.IP)
	}
	addrs, err := nldump.Addrs(handle(t, podNS), l, netlink.FAMILY_V6)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a.IP.IsLinkLocalUnicast() {
			port.LinkLocal = append(port.LinkLocal, a.IP)
		}
	}
	pl, err := portsecurity.PlanPort(port)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := table.Ensure(pl); err != nil || changed {
		t.Fatalf("rules of %s (pod %s): not those of its MAC %s and addresses %v (rewritten: %v, err %v)", ifc.Name, p.UID, port.MAC, port.Addresses, changed, err)
	}
}

// pingFrom pings ip from a given source address of the pod.
func pingFrom(nsName, src, ip string) bool {
	for range pingAttempts {
		if exec.Command("ip", "netns", "exec", nsName, "busybox", "ping", "-c", "1", "-W", "1", "-I", src, ip).Run() == nil {
			return true
		}
	}
	return false
}

// TestRootPortSecurityFollowsThePod runs a pod's port rules through its
// life on a bridge and a VLAN network: written before the port is up,
// changed with the pod's addresses and MAC, off when the network turns port
// security off, gone with the interface, the pod, and (orphans) at garbage
// collection. The pod's traffic shows it: an address the pod holds without
// podnet's approval (as a pod with raw sockets may spoof it) reaches no
// one until approved.
func TestRootPortSecurityFollowsThePod(t *testing.T) {
	for _, kc := range []struct {
		name     string
		features []string
		ifc      func(node string) Interface
	}{
		{"bridge", []string{"veth", "bridge"}, func(string) Interface { return Interface{Kind: KindBridge, Bridge: "pnbr-ps"} }},
		{"vlan", []string{"veth", "bridge", "8021q"}, func(node string) Interface {
			parent, _ := addOutside(t, node)
			return Interface{Kind: KindVLAN, Master: parent, VLAN: 300}
		}},
	} {
		t.Run(kc.name, func(t *testing.T) {
			requireKernel(t, kc.features...)
			d, node := newNode(t)
			table := nodeTable(t, node)
			base := kc.ifc(node)
			nsA, a := newPod(t)
			nsB, b := newPod(t)
			ifcOf := func(mac string, addrs ...string) Interface {
				ifc := base
				ifc.Name = "net1"
				ifc.MAC, _ = net.ParseMAC(mac)
				for _, s := range addrs {
					ifc.Addresses = append(ifc.Addresses, cidr(t, s))
				}
				return ifc
			}
			a.Interfaces = []Interface{ifcOf("02:00:00:00:80:01", "192.168.80.1/24", "fd00:80::1/64")}
			b.Interfaces = []Interface{ifcOf("02:00:00:00:80:02", "192.168.80.2/24", "fd00:80::2/64")}
			apply(t, d, a)
			apply(t, d, b)
			portA := hostName(a.UID, "net1")
			if got := securedPorts(t, table); !slices.Equal(got, sortedStrings(portA, hostName(b.UID, "net1"))) {
				t.Fatalf("secured ports = %v, want both pods'", got)
			}
			requireRulesMatch(t, table, nsA, a, a.Interfaces[0])
			requirePings(t, "approved addresses", nsA, "192.168.80.2", "fd00:80::2")

			// An address podnet did not give the pod reaches no one.
			run(t, "ip", "-n", nsA, "addr", "add", "192.168.80.99/24", "dev", "net1")
			if pingFrom(nsA, "192.168.80.99", "192.168.80.2") {
				t.Fatal("a source address the pod was not given passed its port")
			}
			// Approved at runtime: it passes.
			a.Interfaces = []Interface{ifcOf("02:00:00:00:80:01", "192.168.80.1/24", "192.168.80.99/24", "fd00:80::1/64")}
			apply(t, d, a)
			requireRulesMatch(t, table, nsA, a, a.Interfaces[0])
			if !pingFrom(nsA, "192.168.80.99", "192.168.80.2") {
				t.Fatal("an address added to the pod at runtime does not pass its port")
			}

			// A new MAC: the rules follow it.
			a.Interfaces = []Interface{ifcOf("02:00:00:00:80:11", "192.168.80.1/24", "fd00:80::1/64")}
			apply(t, d, a)
			requireRulesMatch(t, table, nsA, a, a.Interfaces[0])
			requirePings(t, "after a MAC change", nsA, "192.168.80.2", "fd00:80::2")

			// Port security off: no rules, any source passes.
			a.Interfaces[0].PortSecurityDisabled = true
			apply(t, d, a)
			if slices.Contains(securedPorts(t, table), portA) {
				t.Fatal("port security off, but the port still has rules")
			}
			run(t, "ip", "-n", nsA, "addr", "add", "192.168.80.98/24", "dev", "net1")
			if !pingFrom(nsA, "192.168.80.98", "192.168.80.2") {
				t.Fatal("port security off, but an unapproved source address is dropped")
			}
			a.Interfaces[0].PortSecurityDisabled = false
			apply(t, d, a)
			requireRulesMatch(t, table, nsA, a, a.Interfaces[0])

			// The interface removed, re-added, then the pod detached.
			ifc := a.Interfaces
			a.Interfaces = nil
			apply(t, d, a)
			if slices.Contains(securedPorts(t, table), portA) {
				t.Fatal("interface removed, but its port's rules stay")
			}
			a.Interfaces = ifc
			apply(t, d, a)
			requireRulesMatch(t, table, nsA, a, a.Interfaces[0])
			if err := d.Detach(context.Background(), a.UID, a.NetNS); err != nil {
				t.Fatal(err)
			}
			if got := securedPorts(t, table); !slices.Equal(got, []string{hostName(b.UID, "net1")}) {
				t.Fatalf("after detach, secured ports = %v, want b's only", got)
			}

			// Rules of a port that went while the agent was down.
			orphan, err := portsecurity.PlanPort(portsecurity.Port{Name: "pnorphan", MAC: net.HardwareAddr{2, 0, 0, 0, 0, 9}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := table.Ensure(orphan); err != nil {
				t.Fatal(err)
			}
			if _, err := d.CollectGarbage(context.Background(), func(uid string) bool { return uid == b.UID }); err != nil {
				t.Fatal(err)
			}
			if got := securedPorts(t, table); !slices.Equal(got, []string{hostName(b.UID, "net1")}) {
				t.Fatalf("after garbage collection, secured ports = %v, want b's only", got)
			}
			requireRulesMatch(t, table, nsB, b, b.Interfaces[0])
		})
	}
}

func sortedStrings(s ...string) []string {
	slices.Sort(s)
	return s
}

// TestRootPortSecurityFailsClosed makes the port's rules impossible to
// write (another process holds a table of that name as its owner, so the
// kernel refuses every change from anyone else): the interface fails, and
// its port never comes up; it is rolled back.
func TestRootPortSecurityFailsClosed(t *testing.T) {
	d, node := newNode(t)
	table := nodeTable(t, node)
	ownTable(t, table.NetNS, unix.NFPROTO_BRIDGE, portsecurity.TableName)
	nsA, a := newPod(t)
	a.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-fc", Addresses: []net.IPNet{cidr(t, "192.168.81.1/24")}}}
	_, err := d.Apply(context.Background(), a)
	requireMentions(t, err, `interface "net1"`, "port-up", "port security", portsecurity.TableName)
	if slices.Contains(linkNames(t, node), hostName(a.UID, "net1")) || slices.Contains(linkNames(t, nsA), "net1") {
		t.Fatalf("a port whose rules could not be written was left: node %v, pod %v", linkNames(t, node), linkNames(t, nsA))
	}
}

// ownTable makes a table of that family and name in the netns, owned by a
// netlink socket of the test's (NFT_TABLE_F_OWNER, Linux 5.12): until the
// test ends, the kernel refuses every change to it from any other socket.
// github.com/google/nftables cannot set a table's flags, so the batch is
// written here.
func ownTable(t *testing.T, netns int, family byte, name string) {
	t.Helper()
	c, err := mdnetlink.Dial(unix.NETLINK_NETFILTER, &mdnetlink.Config{NetNS: netns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	const tableOwner = 0x2 // NFT_TABLE_F_OWNER
	nfgen := func(family uint8, resID uint16) []byte {
		return binary.BigEndian.AppendUint16([]byte{family, unix.NFNETLINK_V0}, resID)
	}
	attrs, err := mdnetlink.MarshalAttributes([]mdnetlink.Attribute{
		{Type: unix.NFTA_TABLE_NAME, Data: append([]byte(name), 0)},
		{Type: unix.NFTA_TABLE_FLAGS, Data: binary.BigEndian.AppendUint32(nil, tableOwner)},
	})
	if err != nil {
		t.Fatal(err)
	}
	batch := []mdnetlink.Message{
		{Header: mdnetlink.Header{Type: mdnetlink.HeaderType(unix.NFNL_MSG_BATCH_BEGIN), Flags: mdnetlink.Request},
			Data: nfgen(unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)},
		{Header: mdnetlink.Header{Type: mdnetlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_NEWTABLE),
			Flags: mdnetlink.Request | mdnetlink.Acknowledge | mdnetlink.Create},
			Data: append(nfgen(family, 0), attrs...)},
		{Header: mdnetlink.Header{Type: mdnetlink.HeaderType(unix.NFNL_MSG_BATCH_END), Flags: mdnetlink.Request},
			Data: nfgen(unix.AF_UNSPEC, unix.NFNL_SUBSYS_NFTABLES)},
	}
	if _, err := c.SendMessages(batch); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Receive(); err != nil {
		t.Fatalf("make the owned table: %v", err)
	}
}
