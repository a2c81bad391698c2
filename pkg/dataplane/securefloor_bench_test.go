//go:build bench

package dataplane

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/portsecurity"
)

// secureFloor is the floor of everything podnet's result must contain,
// by hand: floorAttach's veth, bridge port, address and pod end up, plus
// the node end's IPv6 address generation off, the pod link's
// accept_ra and accept_redirects off (written from a thread in the pod's
// netns, as the kernel asks), and the port's elements in podnet's shared
// port-security sets, in one nftables transaction before the node end goes
// up. Neither marks (aliases, groups) nor read-backs: those are podnet's
// own bookkeeping, which the ratio to this floor prices.
type secureFloor struct {
	node    *nl.SocketHandle
	bridges map[string]int
	nft     *nftables.Conn
}

// newSecureFloor opens the floor's sockets in the node netns, where
// podnet's port-security table must already be.
func newSecureFloor(t testing.TB, nodeName string, node *nl.SocketHandle, bridges map[string]int) *secureFloor {
	ns, err := netns.GetFromName(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	c, err := nftables.New(nftables.WithNetNSFd(int(ns)), nftables.AsLasting())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseLasting() })
	return &secureFloor{node: node, bridges: bridges, nft: c}
}

// The sets of podnet's table the floor writes into (portsecurity's layout).
var (
	floorTable = &nftables.Table{Family: nftables.TableFamilyBridge, Name: portsecurity.TableName}
	floorIfSet = func(name string) *nftables.Set {
		return &nftables.Set{Table: floorTable, Name: name, KeyType: nftables.TypeIFName}
	}
	floorMACSet = &nftables.Set{Table: floorTable, Name: "mac", Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeEtherAddr)}
	floorV4Set = &nftables.Set{Table: floorTable, Name: "v4", Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeIPAddr)}
	floorV6Set = &nftables.Set{Table: floorTable, Name: "v6", Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeIP6Addr)}
)

func (f *secureFloor) attach(t testing.TB, p Pod) {
	ns, pod, done := floorPod(t, p)
	defer done()
	for _, ifc := range p.Interfaces {
		host := hostName(p.UID, ifc.Name)
		index, link := floorVeth(t, f.node, pod, ns, host, ifc, f.bridges[ifc.Bridge], false)
		floorNoRouterAdverts(t, ns, ifc.Name)
		floorAddrUp(t, pod, index, ifc.Addresses[0])
		f.secure(t, host, linkMAC(t, link), ifc.Addresses[0].IP)

		// The node end: IPv6 address generation off and up, one message.
		nodeUp := floorRequest(f.node, unix.RTM_NEWLINK, unix.NLM_F_ACK)
		msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
		msg.Flags, msg.Change = unix.IFF_UP, unix.IFF_UP
		nodeUp.AddData(msg)
		nodeUp.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(host)))
		spec := nl.NewRtAttr(unix.IFLA_AF_SPEC, nil)
		spec.AddRtAttr(unix.AF_INET6, nil).AddRtAttr(unix.IFLA_INET6_ADDR_GEN_MODE, []byte{nl.IN6_ADDR_GEN_MODE_NONE})
		nodeUp.AddData(spec)
		floorExecute(t, nodeUp, 0)
	}
}

// secure writes the port's elements, as podnet's layout has them, in one
// transaction: its name, non-router; name . MAC; name . IPv4; name . its
// EUI-64 link-local address.
func (f *secureFloor) secure(t testing.TB, port string, mac net.HardwareAddr, ip4 net.IP) {
	name := make([]byte, unix.IFNAMSIZ)
	copy(name, port)
	joined := func(v []byte) []byte {
		k := append(append([]byte{}, name...), v...)
		for len(k)%4 != 0 {
			k = append(k, 0)
		}
		return k
	}
	for _, w := range []struct {
		set *nftables.Set
		key []byte
	}{
		{floorIfSet("secured"), name}, {floorIfSet("norouter"), name}, {floorMACSet, joined(mac)},
		{floorV4Set, joined(ip4.To4())}, {floorV6Set, joined(portsecurity.LinkLocalOf(mac))},
	} {
		if err := f.nft.SetAddElements(w.set, []nftables.SetElement{{Key: w.key}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.nft.Flush(); err != nil {
		t.Fatalf("floor: port security elements: %v", err)
	}
}

// linkMAC reads IFLA_ADDRESS from an RTM_NEWLINK answer.
func linkMAC(t testing.TB, msg []byte) net.HardwareAddr {
	attrs, err := nl.ParseRouteAttr(msg[unix.SizeofIfInfomsg:])
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attrs {
		if a.Attr.Type == unix.IFLA_ADDRESS {
			return net.HardwareAddr(a.Value)
		}
	}
	t.Fatal("floor: no link address in the answer")
	return nil
}

// floorNoRouterAdverts writes the pod link's accept_ra and
// accept_redirects (IPv6 and IPv4) to 0 from a locked thread in the pod's
// netns, which then returns to its own.
func floorNoRouterAdverts(t testing.TB, ns netns.NsHandle, link string) {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer origin.Close()
		if err := netns.Set(ns); err != nil {
			errc <- err
			return
		}
		for _, p := range []string{"ipv6/conf/%s/accept_ra", "ipv6/conf/%s/accept_redirects", "ipv4/conf/%s/accept_redirects"} {
			if err = os.WriteFile(filepath.Join("/proc/sys/net", fmt.Sprintf(p, link)), []byte("0"), 0); err != nil {
				break
			}
		}
		if netns.Set(origin) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatalf("floor: sysctls of %s: %v", link, err)
	}
}
