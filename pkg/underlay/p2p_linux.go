package underlay

import (
	"fmt"
	"net/netip"

	"github.com/google/nftables"
)

// PointToPointTunnels reads back the point-to-point tunnels of podnet's
// table (the sets "from-tun-<port>-<vni>-v<family>"), so that a restarted
// agent keeps the locks of its pods' tunnels in the table it rewrites
// until it has seen those pods again. No table: none.
func (t *Table) PointToPointTunnels() ([]Tunnel, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	conn, done, err := t.conn()
	if err != nil {
		return nil, err
	}
	defer done()
	if ok, err := tableExists(conn); err != nil || !ok {
		return nil, err
	}
	table := &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
	sets, err := conn.GetSets(table)
	if err != nil {
		return nil, fmt.Errorf("nftables table %q: list sets: %w", TableName, err)
	}
	var out []Tunnel
	for _, s := range sets {
		var port uint16
		var vni uint32
		var family Family
		if n, _ := fmt.Sscanf(s.Name, "from-tun-%d-%d-v%d", &port, &vni, &family); n != 3 {
			continue
		}
		elems, err := conn.GetSetElements(s)
		if err != nil {
			return nil, fmt.Errorf("nftables set %q: %w", s.Name, err)
		}
		tun := PointToPoint(port, vni, family, nil)
		for _, e := range elems {
			if a, ok := netip.AddrFromSlice(e.Key); ok {
				tun.Peers = append(tun.Peers, a)
			}
		}
		out = append(out, tun)
	}
	return out, nil
}
