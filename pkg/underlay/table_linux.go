package underlay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TableName is podnet's own table (inet family): the only one this
// package ever touches.
const TableName = "podnet-underlay"

// setComment marks podnet's sets, for whoever lists the ruleset.
const setComment = "podnet: tunnel peers"

// Table applies rulesets to podnet's table in one network namespace.
type Table struct {
	// NetNS is the path of the node's network namespace; "" is the
	// namespace of the process.
	NetNS string

	mu sync.Mutex
}

// Apply makes podnet's table exactly rs, in one transaction: the old
// table (if any) is deleted and the new one created, or only deleted when
// rs is empty. Applying the same ruleset twice gives the same table.
func (t *Table) Apply(rs Ruleset) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	conn, done, err := t.conn()
	if err != nil {
		return err
	}
	defer done()
	exists, err := tableExists(conn)
	if err != nil {
		return err
	}
	table := &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
	if exists {
		conn.DelTable(table)
	}
	if !rs.Empty() {
		if err := build(conn, table, rs); err != nil {
			return fmt.Errorf("nftables table %q: %w", TableName, err)
		}
	}
	if !exists && rs.Empty() {
		return nil
	}
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("nftables table %q: write: %w", TableName, err)
	}
	return nil
}

// Exists reports whether podnet's table is in the namespace.
func (t *Table) Exists() (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	conn, done, err := t.conn()
	if err != nil {
		return false, err
	}
	defer done()
	return tableExists(conn)
}

func (t *Table) conn() (*nftables.Conn, func(), error) {
	if t.NetNS == "" {
		c, err := nftables.New()
		if err != nil {
			return nil, nil, fmt.Errorf("nftables: %w", err)
		}
		return c, func() {}, nil
	}
	f, err := os.Open(t.NetNS)
	if err != nil {
		return nil, nil, fmt.Errorf("node netns %q: %w", t.NetNS, err)
	}
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("nftables in netns %q: %w", t.NetNS, err)
	}
	return c, func() { f.Close() }, nil
}

// tableExists lists the inet tables by name only: a missing table is no
// error.
func tableExists(conn *nftables.Conn) (bool, error) {
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("nftables: list inet tables: %w", err)
	}
	for _, tb := range tables {
		if tb.Name == TableName {
			return true, nil
		}
	}
	return false, nil
}

// build queues the table, its two base chains, its sets and its rules.
func build(conn *nftables.Conn, table *nftables.Table, rs Ruleset) error {
	conn.AddTable(table)
	accept := nftables.ChainPolicyAccept
	chains := map[Hook]*nftables.Chain{}
	for _, h := range []struct {
		hook Hook
		name string
		at   *nftables.ChainHook
	}{{Input, "input", nftables.ChainHookInput}, {Forward, "forward", nftables.ChainHookForward}} {
		chains[h.hook] = conn.AddChain(&nftables.Chain{
			Name: h.name, Table: table, Type: nftables.ChainTypeFilter,
			Hooknum: h.at, Priority: nftables.ChainPriorityFilter, Policy: &accept,
		})
	}
	sets := map[string]*nftables.Set{}
	for _, s := range rs.Sets {
		ns := &nftables.Set{Table: table, Name: s.Name, KeyType: nftables.TypeIPAddr, Comment: setComment}
		if s.Family == IPv6 {
			ns.KeyType = nftables.TypeIP6Addr
		}
		elems := make([]nftables.SetElement, 0, len(s.Addrs))
		for _, a := range s.Addrs {
			elems = append(elems, nftables.SetElement{Key: a.AsSlice()})
		}
		if err := conn.AddSet(ns, elems); err != nil {
			return fmt.Errorf("set %q: %w", s.Name, err)
		}
		sets[s.Name] = ns
	}
	for _, r := range rs.Rules {
		exprs, err := ruleExprs(r, sets)
		if err != nil {
			return err
		}
		conn.AddRule(&nftables.Rule{Table: table, Chain: chains[r.Hook], Exprs: exprs})
	}
	return nil
}

// Header offsets of the addresses, in the network header.
const (
	v4Src, v4Dst, v4Len = 12, 16, 4
	v6Src, v6Dst, v6Len = 8, 24, 16
)

// ruleExprs is a rule as nftables expressions: the match on family,
// protocol, port and segment, the check, a counter and the drop.
func ruleExprs(r Rule, sets map[string]*nftables.Set) ([]expr.Any, error) {
	nfproto := byte(unix.NFPROTO_IPV4)
	src, dst, alen := uint32(v4Src), uint32(v4Dst), uint32(v4Len)
	if r.Family == IPv6 {
		nfproto, src, dst, alen = unix.NFPROTO_IPV6, v6Src, v6Dst, v6Len
	}
	port := make([]byte, 2)
	binary.BigEndian.PutUint16(port, r.Port)
	out := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto}},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{byte(r.Proto)}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: port},
	}
	if s := r.Segment; s != nil {
		v := make([]byte, 4)
		binary.BigEndian.PutUint32(v, s.Value)
		out = append(out,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: s.Offset, Len: s.Len},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: v[4-s.Len:]})
	}
	lookup := func(offset uint32, invert bool) error {
		set, ok := sets[r.Set]
		if !ok {
			return fmt.Errorf("rule names set %q that the ruleset lacks", r.Set)
		}
		out = append(out,
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: alen},
			&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID, Invert: invert})
		return nil
	}
	var err error
	switch r.Check {
	case NotFromSet:
		err = lookup(src, true)
	case ToSet:
		err = lookup(dst, false)
	case Fragmented:
		// exthdr frag exists: any fragment; only a first one carries
		// the port the rule matched on.
		out = append(out,
			&expr.Exthdr{Op: expr.ExthdrOpIpv6, Type: unix.IPPROTO_FRAGMENT, Offset: 0, Len: 1, Flags: unix.NFT_EXTHDR_F_PRESENT, DestRegister: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{1}})
	case NotOnReversePath:
		// fib saddr . iif oif missing: no route back to the source
		// through the interface the packet came in on.
		out = append(out,
			&expr.Fib{Register: 1, FlagSADDR: true, FlagIIF: true, ResultOIF: true},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 0, 0, 0}})
	default:
		err = errors.New("unknown check")
	}
	if err != nil {
		return nil, err
	}
	return append(out, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop}), nil
}
