package dataplane

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"slices"

	"github.com/vishvananda/netlink"
)

// SpanDevice is one of podnet's VXLAN devices on the node, as the kernel
// has it: what the node's tunnel lock is planned from, so that an agent
// that restarts locks exactly the overlays the node still carries.
type SpanDevice struct {
	// Bridge is the bridge the device is a port of ("" when none).
	Bridge string
	VNI    int
	Port   int
	// Local is the source address; nil when the kernel picks one (then the
	// underlay is IPv4).
	Local net.IP
	// Peers are the remotes of its flood list, sorted.
	Peers []net.IP
}

// SpanDevices lists podnet's VXLAN devices on the node (those carrying
// podnet's mark), sorted by VNI.
func (d *Dataplane) SpanDevices(ctx context.Context) ([]SpanDevice, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host, _, err := d.hostHandle()
	if err != nil {
		return nil, err
	}
	// No device is created or deleted meanwhile.
	d.bridgeMu.Lock()
	defer d.bridgeMu.Unlock()
	links, err := linkList(host)
	if err != nil {
		return nil, fmt.Errorf("list node links: %w", err)
	}
	names := map[int]string{}
	for _, l := range links {
		names[l.Attrs().Index] = l.Attrs().Name
	}
	var out []SpanDevice
	for _, l := range links {
		vx, ok := l.(*netlink.Vxlan)
		if !ok || l.Attrs().Alias != vxlanAlias {
			continue
		}
		peers, err := fdbPeers(host, l)
		if err != nil {
			return nil, fmt.Errorf("device %q: read fdb: %w", l.Attrs().Name, err)
		}
		dev := SpanDevice{Bridge: names[l.Attrs().MasterIndex], VNI: vx.VxlanId, Port: vx.Port, Local: canonicalIP(vx.SrcAddr)}
		for _, p := range peers {
			dev.Peers = append(dev.Peers, p)
		}
		slices.SortFunc(dev.Peers, func(a, b net.IP) int { return bytes.Compare(a, b) })
		out = append(out, dev)
	}
	slices.SortFunc(out, func(a, b SpanDevice) int { return a.VNI - b.VNI })
	return out, nil
}
