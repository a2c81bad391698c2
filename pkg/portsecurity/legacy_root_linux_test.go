package portsecurity

import (
	"net"
	"slices"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/test/l2frame"
	"podnet.io/podnet/test/netnstest"
)

// TestRootUpgradeFromPerPortChains starts from the table an agent before
// the shared sets left (one chain per port, jumped to from a map of port
// names; written here by hand, with only its source MAC rule): each port
// written in the new table leaves the old one in the same transaction, a
// spoofed frame is dropped at every step, and the old table goes with its
// last port.
func TestRootUpgradeFromPerPortChains(t *testing.T) {
	l := newLAN(t)
	a := l.addPod(t, "a", 1, false)
	b := l.addPod(t, "b", 2, false)
	o := l.addPod(t, "o", 3, false)
	writeLegacy(t, l.table.NetNS, a, b)

	spoofed := func(from *pod) []byte {
		return l2frame.Eth(o.mac, net.HardwareAddr{2, 0, 0, 0, 0, 0x99}, unix.ETH_P_IP, l2frame.UDP4(from.ip4, o.ip4, []byte("x")))
	}
	obs := newSniffer(t, o)
	dropped := func(step string) {
		t.Helper()
		for _, p := range []*pod{a, b} {
			if newSender(t, p).passes(t, obs, spoofed(p)) {
				t.Errorf("%s: a frame with another source MAC passed %s's port", step, p.port)
			}
		}
	}
	dropped("the old table alone")
	if ports, err := l.table.Ports(); err != nil || !slices.Equal(ports, []string{a.port, b.port}) {
		t.Fatalf("ports with rules = %v, %v; want both ports of the old table", ports, err)
	}

	l.secure(t, a, a.ip4, a.ip6)
	dropped("a in the new table, b in the old")
	if got := legacyChains(t, l.table.NetNS); !slices.Equal(got, []string{b.port}) {
		t.Errorf("chains of the old table with a written anew = %v, want only %s's", got, b.port)
	}

	l.secure(t, b, b.ip4, b.ip6)
	dropped("both in the new table")
	if tables := netnstest.BridgeTables(t, l.table.NetNS); slices.Contains(tables, legacyTableName) {
		t.Errorf("bridge tables %v after the old table's last port was written anew, want no %s", tables, legacyTableName)
	}
	if ports, err := l.table.Ports(); err != nil || !slices.Equal(ports, []string{a.port, b.port}) {
		t.Errorf("ports with rules = %v, %v; want both", ports, err)
	}
}

// writeLegacy writes the per-port layout for the pods' ports: the base
// chain's map from port name to the port's chain, which drops another
// source MAC.
func writeLegacy(t *testing.T, netns int, pods ...*pod) {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(netns))
	if err != nil {
		t.Fatal(err)
	}
	tb := c.AddTable(legacyTable)
	accept := nftables.ChainPolicyAccept
	ch := c.AddChain(&nftables.Chain{Name: baseChain, Table: tb, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: filterPriority, Policy: &accept})
	if err := c.AddSet(legacyMap, nil); err != nil {
		t.Fatal(err)
	}
	c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: legacyMap.Name, IsDestRegSet: true},
	}})
	for _, p := range pods {
		pc := c.AddChain(&nftables.Chain{Name: p.port, Table: tb})
		c.AddRule(&nftables.Rule{Table: tb, Chain: pc, Exprs: drop(load(etherSrc), cmp(expr.CmpOpNeq, p.mac))})
		v4, v6 := SetNames(p.port)
		for _, s := range []*nftables.Set{{Table: tb, Name: v4, KeyType: nftables.TypeIPAddr}, {Table: tb, Name: v6, KeyType: nftables.TypeIP6Addr}} {
			if err := c.AddSet(s, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.SetAddElements(legacyMap, []nftables.SetElement{{Key: ifname(p.port), VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: p.port}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// legacyChains lists the port chains of the old table; nil without it.
func legacyChains(t *testing.T, netns int) []string {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(netns))
	if err != nil {
		t.Fatal(err)
	}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyBridge)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == legacyTableName && ch.Name != baseChain {
			out = append(out, ch.Name)
		}
	}
	return out
}
