package nodecarry

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/hostdev"
	"podnet.io/podnet/pkg/nldump"
)

// kindModules are the modules of podnet's link kinds that are needs
// (pkg/carry), probed always, so that a profile's new network finds its
// answer ready.
var kindModules = []string{"8021q", "ipvlan", "macvlan", "vxlan", "wireguard"}

// NetlinkHost probes the links and addresses of a network namespace
// through netlink, read-only, and the kernel's modules.
type NetlinkHost struct {
	// NetNS is the node's network namespace ("": the agent's own, with
	// hostNetwork).
	NetNS   string
	Modules Modules
}

func (h NetlinkHost) handle() (*netlink.Handle, netns.NsHandle, error) {
	if h.NetNS == "" {
		hd, err := netlink.NewHandle()
		return hd, netns.None(), err
	}
	ns, err := netns.GetFromPath(h.NetNS)
	if err != nil {
		return nil, netns.None(), fmt.Errorf("open netns %q: %w", h.NetNS, err)
	}
	hd, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return nil, netns.None(), fmt.Errorf("netlink in netns %q: %w", h.NetNS, err)
	}
	return hd, ns, nil
}

// Probe implements Host.
func (h NetlinkHost) Probe(_ context.Context, needs []carry.Need) (carry.Node, error) {
	hd, ns, err := h.handle()
	if err != nil {
		return carry.Node{}, err
	}
	defer hd.Close()
	defer ns.Close()
	names, err := dataplane.LinkNames(ns)
	if err != nil {
		return carry.Node{}, fmt.Errorf("list links: %w", err)
	}
	out := carry.Node{Links: make(map[string]bool, len(names))}
	for _, name := range names {
		out.Links[name] = true
	}
	addrs, err := nldump.Addrs(hd, nil, netlink.FAMILY_ALL)
	if err != nil {
		return carry.Node{}, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out.Addresses = append(out.Addresses, ip.Unmap())
		}
	}
	mods := slices.Clone(kindModules)
	for _, n := range needs {
		if n.What == carry.NeedModule {
			mods = append(mods, n.Name)
		}
	}
	out.Modules = h.Modules.Have(mods)
	if out.NICs, err = freeNICs(needs, hd, addrs, ns); err != nil {
		return carry.Node{}, err
	}
	return out, nil
}

// freeNICs are the node's free NICs that a hostDevice need may match,
// read only when there is such a need: the dataplane's own rule of which
// links it would take (dataplane.NodeNICs), so that a node is labelled as
// having a NIC exactly when the agent would take one. Only then are the
// links read whole, which on a node of a thousand ports is megabytes.
func freeNICs(needs []carry.Need, hd *netlink.Handle, addrs []netlink.Addr, ns netns.NsHandle) ([]hostdev.NIC, error) {
	var sels []hostdev.Selector
	for _, n := range needs {
		if n.What == carry.NeedHostDevice {
			sels = append(sels, n.Devices)
		}
	}
	if len(sels) == 0 {
		return nil, nil
	}
	links, err := nldump.Links(hd)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	devices, err := dataplane.NodeNICs(links, addrs, ns, func(name string) bool { return mayMatch(sels, name) }, dataplane.SysfsVFs(dataplane.DefaultPCIDevices))
	if err != nil {
		return nil, fmt.Errorf("read NICs: %w", err)
	}
	var out []hostdev.NIC
	for _, d := range devices {
		if d.Busy == "" {
			out = append(out, hostdev.NIC{Name: d.Name, Driver: d.Driver, PCI: d.PCI, PF: d.PF, VF: d.VF})
		}
	}
	return out, nil
}

// Watch implements Host: it subscribes to the namespace's link and
// address changes.
func (h NetlinkHost) Watch(ctx context.Context, changed func(Change)) error {
	var ns *netns.NsHandle
	if h.NetNS != "" {
		n, err := netns.GetFromPath(h.NetNS)
		if err != nil {
			return fmt.Errorf("open netns %q: %w", h.NetNS, err)
		}
		defer n.Close()
		ns = &n
	}
	done := make(chan struct{})
	defer close(done)
	errs := make(chan error, 2)
	onErr := func(err error) {
		if errors.Is(err, errDumpInterrupted) || errors.Is(err, netlink.ErrDumpInterrupted) {
			return // the first listing was cut short: some old names unknown
		}
		select {
		case errs <- err:
		default:
		}
	}
	// The existing links come first, so that the name a link had before
	// a rename is known.
	links, err := subscribeLinks(ns, done, onErr)
	if err != nil {
		return fmt.Errorf("subscribe to links: %w", err)
	}
	addrs := make(chan netlink.AddrUpdate, 64)
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{Namespace: ns, ErrorCallback: onErr}); err != nil {
		return fmt.Errorf("subscribe to addresses: %w", err)
	}
	names := map[int32]string{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			return err
		case u, ok := <-links:
			if !ok {
				return fmt.Errorf("link subscription closed")
			}
			changed(Change{Links: linkNames(names, u.index, u.name, u.deleted)})
		case u, ok := <-addrs:
			if !ok {
				return fmt.Errorf("address subscription closed")
			}
			if ip, ok := netip.AddrFromSlice(u.LinkAddress.IP); ok {
				changed(Change{Address: ip.Unmap()})
			}
		}
	}
}

// linkNames records a link's update in names (by index) and returns its
// name now and, when that differs, the one it had.
func linkNames(names map[int32]string, index int32, name string, deleted bool) []string {
	before, seen := names[index]
	if deleted {
		delete(names, index)
	} else {
		names[index] = name
	}
	if seen && before != name {
		return []string{name, before}
	}
	return []string{name}
}

// release is the running kernel's release (uname -r).
func release() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}
