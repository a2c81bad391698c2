package dataplane

import (
	"context"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// RemoveNode takes podnet off the node: every node end of a pod's veth
// (whatever its pod), every podnet bridge, even one left with ports that
// are not podnet's (the kernel releases them; they are never deleted), an
// admin's interface that was a bridge's uplink released, podnet's VLAN
// subinterfaces and VXLAN devices, and the port-security table; a host
// device found stranded gets its node name back. It is for
// uninstalling only: pods' interfaces must have been detached before (a
// veth's pod end goes with its node end, a macvlan or ipvlan stays in its
// pod). Links it did not create are never deleted. It returns the names
// of the links it removed.
func (d *Dataplane) RemoveNode(ctx context.Context) ([]string, error) {
	host, hostNS, err := d.hostHandle()
	if err != nil {
		return nil, err
	}
	removed, err := d.removePorts(ctx, host, hostNS, func(string) bool { return false })
	errs := []error{err}
	bridges, err := d.removeBridges(host, hostNS)
	removed = append(removed, bridges...)
	errs = append(errs, err)
	// The bridges' VLAN subinterfaces and VXLAN devices are in no bridge
	// now.
	uplinks, err := removeStrayUplinks(host, hostNS)
	removed = append(removed, uplinks...)
	errs = append(errs, err)
	// Host devices stranded on the node get their names back: no agent
	// is left to do it later.
	restored, err := d.RestoreDevices()
	removed = append(removed, restored...)
	errs = append(errs, err)
	d.portsMu.Lock()
	defer d.portsMu.Unlock()
	if err := d.portRules(int(hostNS)).Delete(); err != nil {
		errs = append(errs, fmt.Errorf("port security: delete table: %w", err))
	}
	return removed, errors.Join(errs...)
}

// removeBridges deletes every podnet bridge of the node, with or without
// ports.
func (d *Dataplane) removeBridges(host *netlink.Handle, hostNS netns.NsHandle) ([]string, error) {
	bridges, err := dumpLinks(hostNS, "bridge", 0)
	if err != nil {
		return nil, fmt.Errorf("list node bridges: %w", err)
	}
	d.bridgeMu.Lock()
	defer d.bridgeMu.Unlock()
	var removed []string
	var errs []error
	for _, l := range bridges {
		if !isBridgeAlias(l.alias) {
			continue
		}
		d.bridgesChanged.Add(1)
		if err := ignore(host.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: l.index}}), unix.ENODEV); err != nil {
			errs = append(errs, fmt.Errorf("bridge %q: delete: %w", l.name, err))
			continue
		}
		removed = append(removed, l.name)
	}
	return removed, errors.Join(errs...)
}
