package portsecurity

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Table is podnet's port-security table in one network namespace. The zero
// value works on the calling process' own netns.
type Table struct {
	// NetNS is an open fd of the netns the table lives in; 0 or less
	// means the process' own.
	NetNS int
}

// The table, its base chain and its map of ports.
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
	portMap = &nftables.Set{
		Table: table, Name: baseChain, IsMap: true,
		KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict,
	}
)

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

// Ensure makes the port's rules those of pl, in one transaction, so the
// port is never unfiltered or half-filtered in between. A port whose rules
// already carry pl's fingerprint is left alone; changed says whether
// anything was written.
func (t Table) Ensure(pl Plan) (changed bool, err error) {
	err = t.withConn(func(c *nftables.Conn) error {
		changed, err = ensure(c, pl)
		return err
	})
	return changed, err
}

// withConn runs f on a connection of its own to the table's netns.
func (t Table) withConn(f func(c *nftables.Conn) error) error {
	c, err := t.conn()
	if err != nil {
		return err
	}
	defer c.CloseLasting()
	return f(c)
}

func ensure(c *nftables.Conn, pl Plan) (bool, error) {
	if pl.Fingerprint == "" {
		return false, fmt.Errorf("port %q: plan has no fingerprint (not made by PlanPort)", pl.Port)
	}
	current, err := fingerprintOf(c, pl.Port)
	if err != nil {
		return false, err
	}
	if current == pl.Fingerprint {
		return false, nil
	}
	if err := writePlan(c, pl); err != nil {
		return false, fmt.Errorf("port %q: write rules to table bridge %s: %w", pl.Port, TableName, explainMissing(err))
	}
	return true, nil
}

// fingerprintOf reads the fingerprint of the port's rules in place, "" for
// none (no table, no chain, no map element, or another layout).
func fingerprintOf(c *nftables.Conn, port string) (string, error) {
	chains, err := portChains(c)
	if err != nil || !slices.Contains(chains, port) {
		return "", err
	}
	rules, err := c.GetRules(table, &nftables.Chain{Name: port, Table: table})
	if err != nil {
		return "", fmt.Errorf("port %q: read rules: %w", port, err)
	}
	elems, err := c.GetSetElements(portMap)
	if err != nil {
		return "", fmt.Errorf("port %q: read map %s: %w", port, baseChain, err)
	}
	if len(rules) == 0 || !slices.ContainsFunc(elems, func(e nftables.SetElement) bool { return string(e.Key) == string(ifname(port)) }) {
		return "", nil
	}
	return string(rules[0].UserData), nil
}

// writePlan writes the table, its base chain and map (kept when present)
// and the port's chain, sets and map element, in one batch.
func writePlan(c *nftables.Conn, pl Plan) error {
	c.AddTable(table)
	c.AddChain(base)
	if err := c.AddSet(portMap, nil); err != nil {
		return err
	}
	ensureBaseRule(c)
	if err := writeChain(c, &nftables.Chain{Name: pl.Port, Table: table}, pl); err != nil {
		return err
	}
	err := c.SetAddElements(portMap, []nftables.SetElement{{
		Key: ifname(pl.Port), VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: pl.Port},
	}})
	if err != nil {
		return err
	}
	return c.Flush()
}

// writeChain queues a port's chain (made or kept, then flushed), its
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
	for i, exprs := range portRules(pl, v4Name, v6Name) {
		r := &nftables.Rule{Table: ch.Table, Chain: chain, Exprs: exprs}
		if i == 0 {
			r.UserData = []byte(pl.Fingerprint)
		}
		c.AddRule(r)
	}
	return nil
}

// ensureBaseRule adds the base chain's one rule, "iifname vmap @ports",
// after flushing the chain, so that it is there exactly once.
func ensureBaseRule(c *nftables.Conn) {
	c.FlushChain(base)
	c.AddRule(&nftables.Rule{Table: table, Chain: base, Exprs: []expr.Any{
		&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
		&expr.Lookup{SourceRegister: 1, SetName: portMap.Name, DestRegister: 0, IsDestRegSet: true},
	}})
}

// Remove deletes the rules of the named ports; a port without rules is
// fine. Each port goes in one transaction: map element, chain, sets.
func (t Table) Remove(ports ...string) error {
	if len(ports) == 0 {
		return nil
	}
	return t.withConn(func(c *nftables.Conn) error { return remove(c, ports) })
}

func remove(c *nftables.Conn, ports []string) error {
	if len(ports) == 0 {
		return nil
	}
	return onTable(c, func() error {
		chains, err := portChains(c)
		if err != nil {
			return err
		}
		sets, err := setNames(c)
		if err != nil {
			return err
		}
		var errs []error
		for _, port := range ports {
			if err := removePort(c, port, slices.Contains(chains, port), sets); err != nil {
				errs = append(errs, fmt.Errorf("port %q: remove rules from table bridge %s: %w", port, TableName, err))
			}
		}
		return errors.Join(errs...)
	})
}

// onTable runs f if the table exists; no table is nothing to do.
func onTable(c *nftables.Conn, f func() error) error {
	if ok, err := hasTable(c); err != nil || !ok {
		return err
	}
	return f()
}

// removePort deletes what exists of one port's objects.
func removePort(c *nftables.Conn, port string, hasChain bool, sets map[string]bool) error {
	if hasChain {
		// The element may be absent (a write that failed half-way cannot
		// leave it so, but an admin may have deleted it); deleting an
		// absent element fails the batch, so it is read first.
		elems, err := c.GetSetElements(portMap)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(elems, func(e nftables.SetElement) bool { return string(e.Key) == string(ifname(port)) }) {
			if err := c.SetDeleteElements(portMap, []nftables.SetElement{{Key: ifname(port)}}); err != nil {
				return err
			}
		}
		c.DelChain(&nftables.Chain{Name: port, Table: table})
	}
	v4Name, v6Name := SetNames(port)
	for _, name := range []string{v4Name, v6Name} {
		if sets[name] {
			c.DelSet(&nftables.Set{Table: table, Name: name})
		}
	}
	return c.Flush()
}

// Ports lists the ports that have rules (their chains), so that the
// caller can remove those of ports that are gone.
func (t Table) Ports() (ports []string, err error) {
	err = t.withConn(func(c *nftables.Conn) error {
		ports, err = portChains(c)
		return err
	})
	return ports, err
}

// portChains lists the table's port chains; no table means none.
func portChains(c *nftables.Conn) ([]string, error) {
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyBridge)
	if err != nil {
		return nil, fmt.Errorf("list bridge chains: %w", explainMissing(err))
	}
	var out []string
	for _, ch := range chains {
		if ch.Table.Name == TableName && ch.Name != baseChain {
			out = append(out, ch.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// setNames lists the sets of the table, which must exist.
func setNames(c *nftables.Conn) (map[string]bool, error) {
	sets, err := c.GetSets(table)
	if err != nil {
		return nil, fmt.Errorf("list sets of table bridge %s: %w", TableName, err)
	}
	out := map[string]bool{}
	for _, s := range sets {
		out[s.Name] = true
	}
	return out, nil
}

// Delete removes the whole table, if present. It is for tests and for
// taking podnet off a node; the agent never calls it.
func (t Table) Delete() error {
	return t.withConn(deleteTable)
}

func deleteTable(c *nftables.Conn) error {
	return onTable(c, func() error {
		c.DelTable(table)
		return c.Flush()
	})
}

// hasTable reports whether podnet's table exists.
func hasTable(c *nftables.Conn) (bool, error) {
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyBridge)
	if err != nil {
		return false, fmt.Errorf("list bridge tables: %w", explainMissing(err))
	}
	return slices.ContainsFunc(tables, func(x *nftables.Table) bool { return x.Name == TableName }), nil
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
