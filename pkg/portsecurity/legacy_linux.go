package portsecurity

import (
	"fmt"
	"slices"

	"github.com/google/nftables"
)

// legacyTableName is the table of the layout before the shared sets
// (layout v3 and earlier): one chain and two address sets per port, and a
// map from port name to its chain. An agent upgraded with pods running
// finds it: each port keeps its old rules until it is written in the new
// table, in the same transaction that removes them from the old one, so no
// port is unfiltered in between; the old table goes with its last port.
const legacyTableName = "podnet-ports"

var (
	legacyTable = &nftables.Table{Family: nftables.TableFamilyBridge, Name: legacyTableName}
	legacyMap   = &nftables.Set{Table: legacyTable, Name: baseChain, IsMap: true,
		KeyType: nftables.TypeIFName, DataType: nftables.TypeVerdict}
)

// legacy is what the old table holds: whether it exists, its port chains,
// the ports in its map and its set names.
type legacy struct {
	present bool
	ports   map[string]bool
	mapped  map[string]bool
	sets    map[string]bool
}

func loadLegacy(c *nftables.Conn) (legacy, error) {
	l := legacy{present: true, ports: map[string]bool{}, mapped: map[string]bool{}, sets: map[string]bool{}}
	chains, err := c.ListChainsOfTableFamily(nftables.TableFamilyBridge)
	if err != nil {
		return l, fmt.Errorf("list bridge chains: %w", explainMissing(err))
	}
	for _, ch := range chains {
		if ch.Table.Name == legacyTableName && ch.Name != baseChain {
			l.ports[ch.Name] = true
		}
	}
	sets, err := c.GetSets(legacyTable)
	if err != nil {
		return l, fmt.Errorf("list sets of table bridge %s: %w", legacyTableName, err)
	}
	for _, s := range sets {
		l.sets[s.Name] = true
	}
	if l.sets[baseChain] {
		elems, err := c.GetSetElements(legacyMap)
		if err != nil {
			return l, fmt.Errorf("read map %s of table bridge %s: %w", baseChain, legacyTableName, err)
		}
		for _, e := range elems {
			l.mapped[portOf(e.Key)] = true
		}
	}
	return l, nil
}

func (l *legacy) has(port string) bool { return l.present && l.ports[port] }

// queueRemove queues the removal of the ports' old objects, or of the old
// table when no port would be left in it; it returns the ports it queued.
func (l *legacy) queueRemove(c *nftables.Conn, ports []string) ([]string, error) {
	var mine []string
	for _, p := range ports {
		if l.has(p) && !slices.Contains(mine, p) {
			mine = append(mine, p)
		}
	}
	if len(mine) == 0 {
		return nil, nil
	}
	if len(mine) == len(l.ports) {
		c.DelTable(legacyTable)
		return mine, nil
	}
	for _, port := range mine {
		if l.mapped[port] {
			// Deleting an element that is absent would fail the
			// transaction: only those read are deleted.
			if err := c.SetDeleteElements(legacyMap, []nftables.SetElement{{Key: ifname(port)}}); err != nil {
				return nil, err
			}
		}
		c.DelChain(&nftables.Chain{Name: port, Table: legacyTable})
		v4, v6 := SetNames(port)
		for _, name := range []string{v4, v6} {
			if l.sets[name] {
				c.DelSet(&nftables.Set{Table: legacyTable, Name: name})
			}
		}
	}
	return mine, nil
}

// removed records that what queueRemove queued for ports was written.
func (l *legacy) removed(ports []string) {
	if len(ports) == 0 {
		return
	}
	if len(ports) == len(l.ports) {
		*l = legacy{}
		return
	}
	for _, port := range ports {
		delete(l.ports, port)
		delete(l.mapped, port)
		v4, v6 := SetNames(port)
		delete(l.sets, v4)
		delete(l.sets, v6)
	}
}
