package portsecurity

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/nftables"
)

// EgressTableName is the netdev-family table podnet owns in a pod's
// network namespace for the port security of its macvlan and ipvlan
// links: frames between two pods on one parent link never cross a node
// bridge, so each pod link's own egress is filtered instead, where the pod
// (without NET_ADMIN) cannot change it.
const EgressTableName = "podnet-egress"

var egressTable = &nftables.Table{Family: nftables.TableFamilyNetdev, Name: EgressTableName}

// Egress is podnet's egress table in one pod's netns. A Plan's Port names
// the pod link whose egress its rules filter.
type Egress struct {
	// NetNS is an open fd of the pod's netns.
	NetNS int
}

// egressChain is the base chain that filters one pod link's egress. Its
// policy is drop, and its last rule accepts what no rule before dropped:
// a frame whose Ethernet header the rules cannot read (a packet socket
// that bypasses the queueing discipline and names its protocol hands the
// hook one without a MAC header) matches no rule, and is dropped rather
// than let through unchecked.
func egressChain(link string) *nftables.Chain {
	policy := nftables.ChainPolicyDrop
	return &nftables.Chain{
		Name: link, Table: egressTable, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookEgress, Priority: nftables.ChainPriorityFilter, Device: link, Policy: &policy,
	}
}

// Ensure makes the rules of the pod link pl.Port those of pl, in one
// transaction; rules that already carry pl's fingerprint are left alone.
// The link must exist (its chain hooks to it), and its rules are written
// before it goes up. The socket is closed in the background: closing it
// waits for the kernel's RCU grace period (Conn), and nothing after the
// write depends on it.
func (e Egress) Ensure(pl Plan) (changed bool, err error) {
	if pl.Fingerprint == "" {
		return false, fmt.Errorf("link %q: plan has no fingerprint (not made by PlanPort)", pl.Port)
	}
	c, err := Table{NetNS: e.NetNS}.conn()
	if err != nil {
		return false, err
	}
	defer func() { go c.CloseLasting() }()
	current, err := egressFingerprint(c, pl.Port)
	if err != nil || current == pl.Fingerprint {
		return false, err
	}
	c.AddTable(egressTable)
	ch := egressChain(pl.Port)
	if err := writeChain(c, ch, pl); err != nil {
		return false, fmt.Errorf("link %q: write rules to table netdev %s: %w", pl.Port, EgressTableName, err)
	}
	c.AddRule(&nftables.Rule{Table: egressTable, Chain: ch, Exprs: ownFrame(pl)})
	if err := c.Flush(); err != nil {
		return false, fmt.Errorf("link %q: write rules to table netdev %s: %w", pl.Port, EgressTableName, explainEgress(err))
	}
	return true, nil
}

// Remove deletes the rules of the named pod links; a link without rules
// is fine.
func (e Egress) Remove(links ...string) error {
	if len(links) == 0 {
		return nil
	}
	c, err := Table{NetNS: e.NetNS}.conn()
	if err != nil {
		return err
	}
	defer func() { go c.CloseLasting() }()
	chains, err := egressChains(c)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range links {
		if !slices.Contains(chains, l) {
			continue
		}
		c.DelChain(&nftables.Chain{Name: l, Table: egressTable})
		v4, v6 := SetNames(l)
		c.DelSet(&nftables.Set{Table: egressTable, Name: v4})
		c.DelSet(&nftables.Set{Table: egressTable, Name: v6})
		if err := c.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("link %q: remove rules from table netdev %s: %w", l, EgressTableName, err))
		}
	}
	return errors.Join(errs...)
}

// Links lists the pod links that have rules.
func (e Egress) Links() ([]string, error) {
	c, err := Table{NetNS: e.NetNS}.conn()
	if err != nil {
		return nil, err
	}
	defer func() { go c.CloseLasting() }()
	return egressChains(c)
}

// egressChains lists the chains of the egress table; none without it.
func egressChains(c *nftables.Conn) ([]string, error) {
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyNetdev)
	if err != nil {
		return nil, fmt.Errorf("list netdev chains: %w", explainEgress(err))
	}
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == EgressTableName {
			out = append(out, ch.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// egressFingerprint reads the fingerprint of a link's rules in place, ""
// for none.
func egressFingerprint(c *nftables.Conn, link string) (string, error) {
	chains, err := egressChains(c)
	if err != nil || !slices.Contains(chains, link) {
		return "", err
	}
	rules, err := c.GetRules(egressTable, &nftables.Chain{Name: link, Table: egressTable})
	if err != nil {
		return "", fmt.Errorf("link %q: read rules: %w", link, err)
	}
	if len(rules) == 0 {
		return "", nil
	}
	return string(rules[0].UserData), nil
}

// writeChain queues a link's chain (made or kept, then flushed), its
// address sets (made or kept, then refilled) and its rules, the first
// carrying the Plan's fingerprint.
func writeChain(c *nftables.Conn, ch *nftables.Chain, pl Plan) error {
	chain := c.AddChain(ch)
	c.FlushChain(chain)
	v4Name, v6Name := SetNames(pl.Port)
	v4 := &nftables.Set{Table: ch.Table, Name: v4Name, KeyType: nftables.TypeIPAddr}
	v6 := &nftables.Set{Table: ch.Table, Name: v6Name, KeyType: nftables.TypeIP6Addr}
	for _, s := range []struct {
		set *nftables.Set
		ips [][]byte
	}{{v4, toBytes(pl.IPv4)}, {v6, toBytes(pl.IPv6)}} {
		if err := c.AddSet(s.set, nil); err != nil {
			return err
		}
		c.FlushSet(s.set)
		var elems []nftables.SetElement
		for _, ip := range s.ips {
			elems = append(elems, nftables.SetElement{Key: ip})
		}
		if len(elems) > 0 {
			if err := c.SetAddElements(s.set, elems); err != nil {
				return err
			}
		}
	}
	for i, exprs := range chainRules(pl, v4Name, v6Name) {
		r := &nftables.Rule{Table: ch.Table, Chain: chain, Exprs: exprs}
		if i == 0 {
			r.UserData = []byte(pl.Fingerprint)
		}
		c.AddRule(r)
	}
	return nil
}

// explainEgress names the kernel features a netdev egress chain needs.
func explainEgress(err error) error {
	if missingFeature(err) {
		return fmt.Errorf("%w (the kernel needs nf_tables with the netdev family and its egress hook: CONFIG_NF_TABLES_NETDEV and CONFIG_NETFILTER_EGRESS, Linux 5.16 or later)", err)
	}
	return err
}
