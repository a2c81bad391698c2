package portsecurity

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// PolicyTableName is podnet's table of a pod's interfaces' policy, in
// the pod's netns: there conntrack works for every kind of interface (the
// bridge family's needs nf_conntrack_bridge, which kernels often lack),
// and the pod, without NET_ADMIN, cannot change it.
const PolicyTableName = "podnet-policy"

// policyLayout marks the input chain's first rule: a table of another
// layout is rewritten whole.
var policyLayout = []byte("podnet policy 1")

var (
	policyTable = &nftables.Table{Family: nftables.TableFamilyINet, Name: PolicyTableName}
	policyIn    = &nftables.Chain{
		Name: "in", Table: policyTable, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &policyAccept,
	}
	policyOut = &nftables.Chain{
		Name: "out", Table: policyTable, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &policyAccept,
	}
	// inIsolated and outIsolated hold the names of the links isolated in
	// each direction; in4, in6, out4 and out6 what they allow, as peer
	// address . protocol . port . link name, each part a range.
	inIsolated  = &nftables.Set{Table: policyTable, Name: "in_isolated", KeyType: nftables.TypeIFName}
	outIsolated = &nftables.Set{Table: policyTable, Name: "out_isolated", KeyType: nftables.TypeIFName}
	in4         = allowSet("in4", nftables.TypeIPAddr)
	in6         = allowSet("in6", nftables.TypeIP6Addr)
	out4        = allowSet("out4", nftables.TypeIPAddr)
	out6        = allowSet("out6", nftables.TypeIP6Addr)
	policySets  = []*nftables.Set{inIsolated, outIsolated, in4, in6, out4, out6}
)

func allowSet(name string, addr nftables.SetDatatype) *nftables.Set {
	return &nftables.Set{Table: policyTable, Name: name, Concatenation: true, Interval: true,
		KeyType: nftables.MustConcatSetType(addr, nftables.TypeInetProto, nftables.TypeInetService, nftables.TypeIFName)}
}

// Header fields the policy reads, in the inet family (no link layer).
var (
	policySrc4 = field{expr.PayloadBaseNetworkHeader, 12, 4}
	policyDst4 = field{expr.PayloadBaseNetworkHeader, 16, 4}
	policySrc6 = field{expr.PayloadBaseNetworkHeader, 8, 16}
	policyDst6 = field{expr.PayloadBaseNetworkHeader, 24, 16}
)

// policyRules are a chain's rules, in order: replies to what was
// allowed, and neighbour and router discovery, pass; then a packet of an
// isolated link (key: the input link in, the output link out) whose
// peer (src4, src6), protocol and destination port no element of that
// link allows is dropped.
func policyRules(key expr.MetaKey, iso, set4, set6 *nftables.Set, peer4, peer6 field) [][]expr.Any {
	established := []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED),
			Xor:  binaryutil.NativeEndian.PutUint32(0)},
		cmp(expr.CmpOpNeq, binaryutil.NativeEndian.PutUint32(0)),
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
	ip4, ip6 := nfproto(unix.NFPROTO_IPV4), nfproto(unix.NFPROTO_IPV6)
	discovery := append(join(ip6, l4(unix.IPPROTO_ICMPV6), load(icmp6Type), between([]byte{133}, []byte{137})),
		&expr.Verdict{Kind: expr.VerdictAccept})
	isolated := []expr.Any{&expr.Meta{Key: key, Register: 1}, &expr.Lookup{SourceRegister: 1, SetName: iso.Name}}
	return [][]expr.Any{
		established,
		discovery,
		drop(isolated, ip4, notAllowed(set4.Name, peer4, key)),
		drop(isolated, ip6, notAllowed(set6.Name, peer6, key)),
	}
}

func nfproto(p byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, cmp(expr.CmpOpEq, []byte{p})}
}

// notAllowed matches a packet whose peer address (f), protocol,
// destination port and link name (key) are in no element of the set.
// Each part starts at a 4-byte register of its own.
func notAllowed(set string, f field, key expr.MetaKey) []expr.Any {
	reg := uint32(concatReg)
	proto := reg + f.len/4
	return []expr.Any{
		&expr.Payload{DestRegister: reg, Base: f.base, Offset: f.offset, Len: f.len},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: proto},
		&expr.Payload{DestRegister: proto + 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Meta{Key: key, Register: proto + 2},
		&expr.Lookup{SourceRegister: reg, SetName: set, Invert: true},
	}
}

// PolicyConn writes ports' policies into the policy table of one netns,
// keeping what it wrote so that each write sends only the elements that
// differ. The agent holds one per pod; it is not safe for concurrent use.
//
// It keeps its socket from the first call until Close: closing an
// nftables socket after a write waits for the kernel's RCU grace period
// (Conn), and while it waits, link changes in that netns wait too
// (measured: an attach's link steps took 13-30 ms instead of 2 ms beside
// a closing socket). So the socket is closed when the pod goes, not on
// its attach. It holds a reference to the netns until then.
type PolicyConn struct {
	// NetNS is an open fd of the netns the table lives in; 0 or less
	// means the process' own.
	NetNS int
	ready bool
	ports map[string]policyEntry
	c     *nftables.Conn
}

// Close closes the socket, in the background, and forgets what was
// written: the next call reads the table again.
func (pc *PolicyConn) Close() {
	if pc.c != nil {
		go pc.c.CloseLasting()
	}
	pc.c, pc.ready, pc.ports = nil, false, nil
}

// conn is the lasting socket, opened on first use.
func (pc *PolicyConn) conn() (*nftables.Conn, error) {
	if pc.c == nil {
		c, err := Table{NetNS: pc.NetNS}.conn()
		if err != nil {
			return nil, err
		}
		pc.c = c
	}
	return pc.c, nil
}

// policyEntry is one port's elements, by set name.
type policyEntry map[string][]nftables.SetElement

// Ensure makes the ports' policies ps, in one transaction.
func (pc *PolicyConn) Ensure(ps ...PolicyPort) error {
	if len(ps) == 0 {
		return nil
	}
	want := make([]policyEntry, len(ps))
	for i, p := range ps {
		var err error
		if want[i], err = policyElements(p); err != nil {
			return err
		}
	}
	return pc.do(func(c *nftables.Conn) error {
		var names []string
		for i, p := range ps {
			if err := queuePolicyDiff(c, pc.ports[p.Port], want[i]); err != nil {
				return fmt.Errorf("port %q: %w", p.Port, err)
			}
			names = append(names, p.Port)
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("ports %v: write their policy into table inet %s: %w", names, PolicyTableName, explainMissing(err))
		}
		for i, p := range ps {
			pc.ports[p.Port] = want[i]
		}
		return nil
	})
}

// Ports are the ports the table holds a policy of, read from the table
// when this PolicyConn has not written or read it yet. A netns without
// the table has none, and is left without it.
func (pc *PolicyConn) Ports() ([]string, error) {
	if !pc.ready {
		c, err := pc.conn()
		if err != nil {
			return nil, err
		}
		if ok, err := hasPolicyTable(c); err != nil || !ok {
			return nil, err
		}
		made, err := pc.setup(c)
		if err == nil && made {
			err = c.Flush()
		}
		if err != nil {
			pc.Close()
			return nil, fmt.Errorf("table inet %s: %w", PolicyTableName, err)
		}
		pc.ready = true
	}
	ports := slices.Collect(maps.Keys(pc.ports))
	slices.Sort(ports)
	return ports, nil
}

// Remove deletes the ports' policies in one transaction: they are no
// longer isolated.
func (pc *PolicyConn) Remove(ports ...string) error {
	return pc.do(func(c *nftables.Conn) error {
		for _, port := range ports {
			if err := queuePolicyDiff(c, pc.ports[port], nil); err != nil {
				return fmt.Errorf("port %q: %w", port, err)
			}
		}
		if err := c.Flush(); err != nil {
			return fmt.Errorf("ports %v: remove their policy from table inet %s: %w", ports, PolicyTableName, err)
		}
		for _, port := range ports {
			delete(pc.ports, port)
		}
		return nil
	})
}

// DeletePolicyTable removes the policy table of the netns (fd, 0 for the
// process' own), if present; for tests and for taking podnet off a node.
func DeletePolicyTable(netns int) error {
	c, err := Table{NetNS: netns}.conn()
	if err != nil {
		return err
	}
	// Off the caller's path, as PolicyConn's.
	defer func() { go c.CloseLasting() }()
	c.DelTable(policyTable)
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("delete table inet %s: %w", PolicyTableName, err)
	}
	return nil
}

// do runs f on the lasting socket, the table set up first: made when
// absent or of another layout, in f's own transaction; read back when
// this PolicyConn has not written it yet (an agent that started again).
// After a failure the socket is closed and the next call starts from
// what the kernel holds.
func (pc *PolicyConn) do(f func(c *nftables.Conn) error) error {
	c, err := pc.conn()
	if err != nil {
		return err
	}
	made := false
	if !pc.ready {
		if made, err = pc.setup(c); err != nil {
			return err
		}
	}
	if err := f(c); err != nil {
		pc.Close()
		if made {
			err = fmt.Errorf("%w (making table inet %s: the kernel needs nf_tables' inet family, nf_conntrack and nft_ct)", err, PolicyTableName)
		}
		return err
	}
	pc.ready = true
	return nil
}

// setup reads the table's elements when it is in place; else it queues
// the table's making anew on c (made), for the caller's transaction.
func (pc *PolicyConn) setup(c *nftables.Conn) (made bool, err error) {
	pc.ports = map[string]policyEntry{}
	inPlace, err := policyInPlace(c)
	if err != nil {
		return false, err
	}
	if inPlace {
		for _, s := range policySets {
			es, err := c.GetSetElements(s)
			if err != nil {
				return false, fmt.Errorf("read set %s of table inet %s: %w", s.Name, PolicyTableName, err)
			}
			for _, e := range es {
				port := portOfPolicyKey(s, e.Key)
				if pc.ports[port] == nil {
					pc.ports[port] = policyEntry{}
				}
				pc.ports[port][s.Name] = append(pc.ports[port][s.Name], nftables.SetElement{Key: e.Key, KeyEnd: e.KeyEnd})
			}
		}
		return false, nil
	}
	c.AddTable(policyTable)
	c.DelTable(policyTable)
	c.AddTable(policyTable)
	for _, s := range policySets {
		if err := c.AddSet(s, nil); err != nil {
			return false, fmt.Errorf("table inet %s: set %s: %w", PolicyTableName, s.Name, err)
		}
	}
	c.AddChain(policyIn)
	c.AddChain(policyOut)
	for i, exprs := range policyRules(expr.MetaKeyIIFNAME, inIsolated, in4, in6, policySrc4, policySrc6) {
		r := &nftables.Rule{Table: policyTable, Chain: policyIn, Exprs: exprs}
		if i == 0 {
			r.UserData = policyLayout
		}
		c.AddRule(r)
	}
	for _, exprs := range policyRules(expr.MetaKeyOIFNAME, outIsolated, out4, out6, policyDst4, policyDst6) {
		c.AddRule(&nftables.Rule{Table: policyTable, Chain: policyOut, Exprs: exprs})
	}
	return true, nil
}

// hasPolicyTable says whether the netns has the table.
func hasPolicyTable(c *nftables.Conn) (bool, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("list inet tables: %w", err)
	}
	return slices.ContainsFunc(tables, func(t *nftables.Table) bool { return t.Name == PolicyTableName }), nil
}

// policyInPlace says whether the table has this layout.
func policyInPlace(c *nftables.Conn) (bool, error) {
	if ok, err := hasPolicyTable(c); err != nil || !ok {
		return false, err
	}
	rules, err := c.GetRules(policyTable, policyIn)
	if err != nil {
		return false, nil
	}
	return len(rules) > 0 && bytes.Equal(rules[0].UserData, policyLayout), nil
}

// portOfPolicyKey is the port name in a key of the set: all of it in the
// isolation sets, its last IFNAMSIZ bytes in the others.
func portOfPolicyKey(s *nftables.Set, key []byte) string {
	if s.Concatenation && len(key) >= unix.IFNAMSIZ {
		key = key[len(key)-unix.IFNAMSIZ:]
	}
	return portOf(key)
}

// policyElements are the elements of a port's policy, by set.
func policyElements(p PolicyPort) (policyEntry, error) {
	e := policyEntry{}
	for _, d := range []struct {
		dir        PolicyDirection
		iso        *nftables.Set
		set4, set6 *nftables.Set
	}{{p.In, inIsolated, in4, in6}, {p.Out, outIsolated, out4, out6}} {
		if !d.dir.Isolated {
			continue
		}
		e[d.iso.Name] = []nftables.SetElement{{Key: ifname(p.Port)}}
		keys, err := policyKeys(p.Port, d.dir)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			s := d.set4
			if k.v6 {
				s = d.set6
			}
			e[s.Name] = append(e[s.Name], nftables.SetElement{Key: k.start, KeyEnd: k.end})
		}
	}
	return e, nil
}

// queuePolicyDiff queues the deletion of the elements was has and is has
// not, then the addition of those is has and was has not.
func queuePolicyDiff(c *nftables.Conn, was, is policyEntry) error {
	for _, s := range policySets {
		if del := elementsMinus(was[s.Name], is[s.Name]); len(del) > 0 {
			if err := c.SetDeleteElements(s, del); err != nil {
				return err
			}
		}
	}
	for _, s := range policySets {
		if add := elementsMinus(is[s.Name], was[s.Name]); len(add) > 0 {
			if err := c.SetAddElements(s, add); err != nil {
				return err
			}
		}
	}
	return nil
}

func elementsMinus(a, b []nftables.SetElement) []nftables.SetElement {
	var out []nftables.SetElement
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y nftables.SetElement) bool {
			return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.KeyEnd, y.KeyEnd)
		}) {
			out = append(out, x)
		}
	}
	return out
}
