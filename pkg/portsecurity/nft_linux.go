package portsecurity

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// Table is podnet's port-security table in one network namespace. The zero
// value works on the calling process' own netns.
type Table struct {
	// NetNS is an open fd of the netns the table lives in; 0 or less
	// means the process' own.
	NetNS int
}

// The table and its base chain. Every secured port is a few elements of
// five sets the base chain looks up; no object is per port, so writing a
// port's rules costs the same with 2 ports on the node as with 1,000.
var (
	table = &nftables.Table{Family: nftables.TableFamilyBridge, Name: TableName}
	// filterPriority is the bridge family's "filter" priority
	// (NF_BR_PRI_FILTER_BRIDGED).
	filterPriority = nftables.ChainPriorityRef(-200)
	policyAccept   = nftables.ChainPolicyAccept
	base           = &nftables.Chain{
		Name: baseChain, Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPrerouting, Priority: filterPriority, Policy: &policyAccept,
	}
	// securedSet holds the secured ports' names; noRouterSet those of
	// them that are not a router's.
	securedSet  = &nftables.Set{Table: table, Name: "secured", KeyType: nftables.TypeIFName}
	noRouterSet = &nftables.Set{Table: table, Name: "norouter", KeyType: nftables.TypeIFName}
	// macSet, v4Set and v6Set hold each port's name joined with its MAC
	// and allowed addresses.
	macSet = &nftables.Set{Table: table, Name: "mac", Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeEtherAddr)}
	v4Set = &nftables.Set{Table: table, Name: "v4", Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeIPAddr)}
	v6Set = &nftables.Set{Table: table, Name: "v6", Concatenation: true,
		KeyType: nftables.MustConcatSetType(nftables.TypeIFName, nftables.TypeIP6Addr)}
	sets = []*nftables.Set{securedSet, noRouterSet, macSet, v4Set, v6Set}
)

// layoutMark is the base chain's first rule's user data: a table whose
// rules carry another is rewritten.
var layoutMark = []byte("podnet port security " + layoutVersion)

func (t Table) conn() (*nftables.Conn, error) {
	var opts []nftables.ConnOption
	if t.NetNS > 0 {
		opts = append(opts, nftables.WithNetNSFd(t.NetNS))
	}
	c, err := nftables.New(append(opts, nftables.AsLasting())...)
	if err != nil {
		return nil, fmt.Errorf("nftables: %w", err)
	}
	return c, nil
}

// withState runs f on a connection of its own to the table's netns, with
// the table's state read first.
func (t Table) withState(f func(c *nftables.Conn, st *state) error) error {
	c, err := t.conn()
	if err != nil {
		return err
	}
	defer c.CloseLasting()
	st, err := readState(c)
	if err != nil {
		return err
	}
	return f(c, st)
}

// Ensure makes the port's rules those of pl, in one transaction, so the
// port is never unfiltered or half-filtered in between. A port whose rules
// already carry pl's fingerprint is left alone; changed says whether
// anything was written.
func (t Table) Ensure(pl Plan) (changed bool, err error) {
	err = t.withState(func(c *nftables.Conn, st *state) error {
		changed, err = st.ensure(c, pl)
		return err
	})
	return changed, err
}

// Remove deletes the rules of the named ports, in one transaction; a port
// without rules is fine.
func (t Table) Remove(ports ...string) error {
	if len(ports) == 0 {
		return nil
	}
	return t.withState(func(c *nftables.Conn, st *state) error { return st.remove(c, ports) })
}

// Ports lists the ports that have rules, so that the caller can remove
// those of ports that are gone.
func (t Table) Ports() (ports []string, err error) {
	err = t.withState(func(_ *nftables.Conn, st *state) error {
		ports = st.portNames()
		return nil
	})
	return ports, err
}

// Delete removes the whole table, if present. It is for tests and for
// taking podnet off a node; the agent never calls it.
func (t Table) Delete() error {
	return t.withState(func(c *nftables.Conn, st *state) error { return st.delete(c) })
}

// state is what the table holds, as last read or written: each port's
// elements and the fingerprint of the plan they make, whether the table is
// in place in this layout, and what an agent before the shared sets left.
type state struct {
	exists, ready bool
	ports         map[string]entry
	legacy        legacy
}

// entry is one port's elements in the sets, as read or written, and the
// fingerprint of the Plan they are; "" when they are not a whole plan's (a
// port not in the secured set, or without its MAC), which no Plan matches.
type entry struct {
	elems       elements
	fingerprint string
}

// readState reads the table's state: one dump of each set, whatever the number
// of ports. A table of another layout is not ready, and its ports count as
// unsecured until written again.
func readState(c *nftables.Conn) (*state, error) {
	st := &state{ports: map[string]entry{}}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyBridge)
	if err != nil {
		return nil, fmt.Errorf("list bridge tables: %w", explainMissing(err))
	}
	for _, tb := range tables {
		switch tb.Name {
		case TableName:
			st.exists = true
		case legacyTableName:
			if st.legacy, err = loadLegacy(c); err != nil {
				return nil, err
			}
		}
	}
	if !st.exists {
		return st, nil
	}
	if st.ready, err = layoutInPlace(c); err != nil || !st.ready {
		return st, err
	}
	if err := st.readPorts(c); err != nil {
		return nil, err
	}
	return st, nil
}

// layoutInPlace says whether the table has this layout's sets and its
// base chain carries layoutMark.
func layoutInPlace(c *nftables.Conn) (bool, error) {
	have, err := c.GetSets(table)
	if err != nil {
		return false, fmt.Errorf("list sets of table bridge %s: %w", TableName, err)
	}
	for _, want := range sets {
		if !slices.ContainsFunc(have, func(s *nftables.Set) bool { return s.Name == want.Name && s.KeyType.Bytes == want.KeyType.Bytes }) {
			return false, nil
		}
	}
	rules, err := c.GetRules(table, base)
	if err != nil {
		// No base chain: not in place.
		return false, nil
	}
	return len(rules) > 0 && bytes.Equal(rules[0].UserData, layoutMark), nil
}

// readPorts reads every set's elements, by port, and rebuilds the plan
// they make to know its fingerprint.
func (st *state) readPorts(c *nftables.Conn) error {
	plans := map[string]*Plan{}
	for _, s := range sets {
		es, err := c.GetSetElements(s)
		if err != nil {
			return fmt.Errorf("read set %s of table bridge %s: %w", s.Name, TableName, err)
		}
		for _, e := range es {
			name := portOf(e.Key)
			p := st.ports[name]
			if p.elems == nil {
				p.elems = elements{}
			}
			p.elems[s.Name] = append(p.elems[s.Name], slices.Clone(e.Key))
			st.ports[name] = p
			pl := plans[name]
			if pl == nil {
				pl = &Plan{Port: name, Router: true}
				plans[name] = pl
			}
			v := e.Key[min(len(e.Key), unix.IFNAMSIZ):]
			switch {
			case s == noRouterSet:
				pl.Router = false
			case s == macSet && len(v) >= 6:
				pl.MAC = net.HardwareAddr(slices.Clone(v[:6]))
			case s == v4Set && len(v) >= 4:
				pl.IPv4 = append(pl.IPv4, net.IP(slices.Clone(v[:4])))
			case s == v6Set && len(v) >= 16:
				pl.IPv6 = append(pl.IPv6, net.IP(slices.Clone(v[:16])))
			}
		}
	}
	for name, pl := range plans {
		p := st.ports[name]
		if len(p.elems[securedSet.Name]) == 1 && len(p.elems[macSet.Name]) == 1 {
			pl.IPv4, pl.IPv6 = sortedUnique(pl.IPv4), sortedUnique(pl.IPv6)
			p.fingerprint = fingerprint(*pl)
		}
		st.ports[name] = p
	}
	return nil
}

func (st *state) portNames() []string {
	out := slices.Collect(maps.Keys(st.ports))
	for p := range st.legacy.ports {
		if _, ok := st.ports[p]; !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ensure writes pl's elements where the port's in place differ, in one
// transaction with the table's setup when it is not ready and the port's
// leftovers of the legacy layout.
func (st *state) ensure(c *nftables.Conn, pl Plan) (bool, error) {
	if pl.Fingerprint == "" {
		return false, fmt.Errorf("port %q: plan has no fingerprint (not made by PlanPort)", pl.Port)
	}
	old, known := st.ports[pl.Port]
	if st.ready && known && old.fingerprint == pl.Fingerprint && !st.legacy.has(pl.Port) {
		return false, nil
	}
	err := st.queueSetup(c)
	is := elementsOf(pl)
	if err == nil {
		// After queueSetup, st.ports holds only what is in place.
		err = queueDiff(c, st.ports[pl.Port].elems, is)
	}
	var old3 []string
	if err == nil {
		old3, err = st.legacy.queueRemove(c, []string{pl.Port})
	}
	if err == nil {
		err = c.Flush()
	}
	if err != nil {
		return false, fmt.Errorf("port %q: write rules to table bridge %s: %w", pl.Port, TableName, explainMissing(err))
	}
	st.exists, st.ready = true, true
	st.ports[pl.Port] = entry{elems: is, fingerprint: pl.Fingerprint}
	st.legacy.removed(old3)
	return true, nil
}

// queueSetup queues the table in this layout, unless it is in place: a
// table of another layout is replaced (its ports are written again by
// whoever secures them).
func (st *state) queueSetup(c *nftables.Conn) error {
	if st.ready {
		return nil
	}
	if st.exists {
		c.DelTable(table)
		clear(st.ports)
	}
	c.AddTable(table)
	for _, s := range sets {
		if err := c.AddSet(s, nil); err != nil {
			return err
		}
	}
	c.AddChain(base)
	for i, exprs := range baseRules() {
		r := &nftables.Rule{Table: table, Chain: base, Exprs: exprs}
		if i == 0 {
			r.UserData = layoutMark
		}
		c.AddRule(r)
	}
	return nil
}

// remove deletes the ports' elements in one transaction.
func (st *state) remove(c *nftables.Conn, ports []string) error {
	var gone []string
	for _, port := range ports {
		if p, ok := st.ports[port]; ok {
			if err := queueDiff(c, p.elems, elements{}); err != nil {
				return fmt.Errorf("port %q: remove rules from table bridge %s: %w", port, TableName, err)
			}
			gone = append(gone, port)
		}
	}
	old3, err := st.legacy.queueRemove(c, ports)
	if err != nil {
		return fmt.Errorf("ports %v: remove rules from table bridge %s: %w", ports, legacyTableName, err)
	}
	if len(gone) == 0 && len(old3) == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("ports %v: remove rules from table bridge %s: %w", append(gone, old3...), TableName, err)
	}
	for _, port := range gone {
		delete(st.ports, port)
	}
	st.legacy.removed(old3)
	return nil
}

// delete removes the table and the legacy one.
func (st *state) delete(c *nftables.Conn) error {
	if !st.exists && !st.legacy.present {
		return nil
	}
	if st.exists {
		c.DelTable(table)
	}
	if st.legacy.present {
		c.DelTable(legacyTable)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete table bridge %s: %w", TableName, err)
	}
	*st = state{ports: map[string]entry{}}
	return nil
}

// elements are a port's keys in each set, by set name.
type elements map[string][][]byte

// elementsOf is what pl puts into the sets.
func elementsOf(pl Plan) elements {
	name := ifname(pl.Port)
	join := func(v []byte) []byte {
		k := append(slices.Clone(name), v...)
		// A concatenation's parts are padded to 4 bytes.
		for len(k)%4 != 0 {
			k = append(k, 0)
		}
		return k
	}
	e := elements{securedSet.Name: {name}, macSet.Name: {join(pl.MAC)}}
	if !pl.Router {
		e[noRouterSet.Name] = [][]byte{name}
	}
	for _, a := range pl.IPv4 {
		e[v4Set.Name] = append(e[v4Set.Name], join(a.To4()))
	}
	for _, a := range pl.IPv6 {
		e[v6Set.Name] = append(e[v6Set.Name], join(a.To16()))
	}
	return e
}

// queueDiff queues the deletion of what was has and is does not, and the
// addition of what is has and was does not.
func queueDiff(c *nftables.Conn, was, is elements) error {
	for _, s := range sets {
		del, add := minus(was[s.Name], is[s.Name]), minus(is[s.Name], was[s.Name])
		if len(del) > 0 {
			if err := c.SetDeleteElements(s, del); err != nil {
				return err
			}
		}
		if len(add) > 0 {
			if err := c.SetAddElements(s, add); err != nil {
				return err
			}
		}
	}
	return nil
}

// minus are the keys of a not in b, as set elements.
func minus(a, b [][]byte) []nftables.SetElement {
	var out []nftables.SetElement
	for _, k := range a {
		if !slices.ContainsFunc(b, func(x []byte) bool { return bytes.Equal(x, k) }) {
			out = append(out, nftables.SetElement{Key: k})
		}
	}
	return out
}

// portOf is the port name at the start of a set key.
func portOf(key []byte) string {
	name, _, _ := bytes.Cut(key[:min(len(key), unix.IFNAMSIZ)], []byte{0})
	return string(name)
}

// explainMissing names the kernel features behind the errors of a kernel
// without them: no bridge family, or an expression whose module cannot be
// loaded (ENOENT).
func explainMissing(err error) error {
	if missingFeature(err) {
		return fmt.Errorf("%w (the kernel needs nf_tables with the bridge family, CONFIG_NF_TABLES_BRIDGE, "+
			"and the modules nf_tables and nft_meta_bridge loaded or loadable)", err)
	}
	return err
}

// missingFeature says whether err is what a kernel without a family, hook
// or expression module answers.
func missingFeature(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.ENOENT) ||
		strings.Contains(err.Error(), "no such file or directory")
}

// ifname is a link name as nftables keys it: IFNAMSIZ bytes, NUL padded.
func ifname(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}

func toBytes[T ~[]byte](ips []T) [][]byte {
	out := make([][]byte, len(ips))
	for i, ip := range ips {
		out[i] = []byte(ip)
	}
	return out
}

// be16 is a 16-bit value in network byte order.
func be16(v uint16) []byte {
	return binary.BigEndian.AppendUint16(nil, v)
}
