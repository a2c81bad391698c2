package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/nftables"
	mdnetlink "github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/portsecurity"
)

// serveTCP answers every connection to the ports, on any address of the
// netns, with one word.
func serveTCP(t *testing.T, nsName string, ports ...int) {
	t.Helper()
	err := inNetNS(nsHandle(t, nsName), func() error {
		for _, port := range ports {
			l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
			if err != nil {
				return err
			}
			t.Cleanup(func() { l.Close() })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					c.Write([]byte("ok"))
					c.Close()
				}
			}()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("serve in %s: %v", nsName, err)
	}
}

// answers says whether a TCP connection from the netns to ip:port reads
// the server's word. A connection that should pass is tried three times:
// a link that just came up may lose the first neighbour solicitation.
func answers(t *testing.T, nsName, ip string, port int, tries int) bool {
	t.Helper()
	ns := nsHandle(t, nsName)
	ok := false
	for range tries {
		err := inNetNS(ns, func() error {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), time.Second)
			if err != nil {
				return nil
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Second))
			n, _ := c.Read(make([]byte, 8))
			ok = n > 0
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return true
		}
	}
	return false
}

// nftGeneration is the netns' nftables generation, which every committed
// nftables transaction there moves on (NFT_MSG_GETGEN).
func nftGeneration(t *testing.T, nsName string) uint32 {
	t.Helper()
	c, err := mdnetlink.Dial(unix.NETLINK_NETFILTER, &mdnetlink.Config{NetNS: int(nsHandle(t, nsName))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgs, err := c.Execute(mdnetlink.Message{
		Header: mdnetlink.Header{Type: mdnetlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETGEN), Flags: mdnetlink.Request},
		Data:   []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0},
	})
	if err != nil || len(msgs) != 1 || len(msgs[0].Data) < 4 {
		t.Fatalf("nftables generation of %s: %v (%d messages)", nsName, err, len(msgs))
	}
	ad, err := mdnetlink.NewAttributeDecoder(msgs[0].Data[4:])
	if err != nil {
		t.Fatal(err)
	}
	ad.ByteOrder = binary.BigEndian
	for ad.Next() {
		if ad.Type() == unix.NFTA_GEN_ID {
			return ad.Uint32()
		}
	}
	t.Fatalf("nftables generation of %s: no generation id in the answer", nsName)
	return 0
}

// policyPorts are the links the pod's policy table holds a policy of,
// read by a connection of the test's own; none without the table.
func policyPorts(t *testing.T, nsName string) []string {
	t.Helper()
	ports, err := (&portsecurity.PolicyConn{NetNS: int(nsHandle(t, nsName))}).Ports()
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// hasPolicyTable says whether the netns has the policy table.
func hasPolicyTable(t *testing.T, nsName string) bool {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(int(nsHandle(t, nsName))))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(tables, func(tb *nftables.Table) bool { return tb.Name == portsecurity.PolicyTableName })
}

// onTwoBridges gives a pod net1 on one bridge and net2 on another, with
// host number n on each network.
func onTwoBridges(t *testing.T, p *Pod, n int) {
	p.Interfaces = []Interface{
		{Name: "net1", Kind: KindBridge, Bridge: "pnbr-pol1", Addresses: []net.IPNet{cidr(t, fmt.Sprintf("192.168.81.%d/24", n))}},
		{Name: "net2", Kind: KindBridge, Bridge: "pnbr-pol2", Addresses: []net.IPNet{cidr(t, fmt.Sprintf("192.168.82.%d/24", n))}},
	}
}

func tcpFrom(peer string, port uint16) portsecurity.PolicyDirection {
	return portsecurity.PolicyDirection{Isolated: true, Allow: []portsecurity.Allow{
		{Peer: netip.MustParsePrefix(peer), Protocol: unix.IPPROTO_TCP, PortLo: port, PortHi: port},
	}}
}

// TestRootPolicyFollowsTheInterface runs an interface's policy through
// its life, shown by real traffic: pod b's net1 takes in only what its
// policy allows (peer a on TCP port 80), its unisolated net2 everything;
// a changed policy is followed, an Apply of the same policy writes no
// nftables transaction in the pod, and a policy removed lets everything
// in. Pods without a policy never get the table; detach removes it.
func TestRootPolicyFollowsTheInterface(t *testing.T) {
	requireKernel(t, "veth", "bridge")
	d, _ := newNode(t)
	nsA, a := newPod(t)
	nsB, b := newPod(t)
	nsC, c := newPod(t)
	onTwoBridges(t, &a, 1)
	onTwoBridges(t, &b, 2)
	onTwoBridges(t, &c, 3)
	apply(t, d, a)
	apply(t, d, c)
	serveTCP(t, nsB, 80, 8080)

	type cell struct {
		from, to string
		port     int
		want     bool
	}
	check := func(t *testing.T, cells ...cell) {
		t.Helper()
		for _, cl := range cells {
			tries := 1
			if cl.want {
				tries = 3
			}
			if got := answers(t, cl.from, cl.to, cl.port, tries); got != cl.want {
				t.Errorf("%s -> %s:%d answered %t, want %t", cl.from, cl.to, cl.port, got, cl.want)
			}
		}
	}

	t.Run("IngressFromOnePeerOnOnePort", func(t *testing.T) {
		b.Interfaces[0].PolicyIn = tcpFrom("192.168.81.1/32", 80)
		apply(t, d, b)
		check(t,
			cell{nsA, "192.168.81.2", 80, true},
			cell{nsA, "192.168.82.2", 8080, true},
			cell{nsC, "192.168.82.2", 80, true},
			cell{nsA, "192.168.81.2", 8080, false},
			cell{nsC, "192.168.81.2", 80, false},
		)
		if got := policyPorts(t, nsB); len(got) != 1 || got[0] != "net1" {
			t.Errorf("policy table of b names %v, want [net1]", got)
		}
	})

	t.Run("ChangedPolicyIsFollowed", func(t *testing.T) {
		before := nftGeneration(t, nsB)
		b.Interfaces[0].PolicyIn = tcpFrom("192.168.81.3/32", 8080)
		apply(t, d, b)
		if nftGeneration(t, nsB) == before {
			t.Fatal("a changed policy committed no nftables transaction in the pod")
		}
		check(t,
			cell{nsC, "192.168.81.2", 8080, true},
			cell{nsA, "192.168.81.2", 80, false},
			cell{nsC, "192.168.81.2", 80, false},
		)
	})

	t.Run("ResyncWritesNothing", func(t *testing.T) {
		before, calls := nftGeneration(t, nsB), d.policyCalls.Load()
		requireIdempotent(t, d, b, nsB)
		if after := nftGeneration(t, nsB); after != before {
			t.Fatalf("an Apply of the same policy committed nftables transactions in the pod (generation %d -> %d)", before, after)
		}
		if got := d.policyCalls.Load() - calls; got != 0 {
			t.Fatalf("an Apply of the same policy reached the pod's policy table %d times, want none", got)
		}
	})

	t.Run("RemovedPolicyLetsEverythingIn", func(t *testing.T) {
		b.Interfaces[0].PolicyIn = portsecurity.PolicyDirection{}
		apply(t, d, b)
		check(t,
			cell{nsA, "192.168.81.2", 80, true},
			cell{nsA, "192.168.81.2", 8080, true},
			cell{nsC, "192.168.81.2", 80, true},
		)
		if got := policyPorts(t, nsB); len(got) != 0 {
			t.Errorf("policy table of b still names %v", got)
		}
	})

	t.Run("NoTableWithoutPolicyAndNoneAfterDetach", func(t *testing.T) {
		for _, ns := range []string{nsA, nsC} {
			if hasPolicyTable(t, ns) {
				t.Errorf("pod %s without a policy has the policy table", ns)
			}
		}
		b.Interfaces[1].PolicyOut = portsecurity.PolicyDirection{Isolated: true}
		apply(t, d, b)
		if got := policyPorts(t, nsB); len(got) != 1 || got[0] != "net2" {
			t.Fatalf("policy table of b names %v, want [net2]", got)
		}
		if err := d.Detach(t.Context(), b.UID, b.NetNS); err != nil {
			t.Fatal(err)
		}
		if hasPolicyTable(t, nsB) {
			t.Fatal("detach left the policy table in the pod")
		}
	})

	t.Run("FailsClosed", func(t *testing.T) {
		// Another process owns a table of that name in pod d: the
		// kernel refuses every change to it from anyone else.
		nsD, pd := newPod(t)
		onTwoBridges(t, &pd, 4)
		pd.Interfaces[0].PolicyIn = tcpFrom("192.168.81.1/32", 80)
		ns := nsHandle(t, nsD)
		ownTable(t, int(ns), unix.NFPROTO_INET, portsecurity.PolicyTableName)
		_, err := d.Apply(t.Context(), pd)
		requireMentions(t, err, "net1", "network policy")
		if links := linkNames(t, nsD); slices.Contains(links, "net1") || !slices.Contains(links, "net2") {
			t.Fatalf("pod d's links %v: want net2 only, net1 never made without its policy", links)
		}
	})
}
