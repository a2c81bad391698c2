package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/hostdev"
)

// ethtoolGDrvInfo reads a device's driver and bus address.
const ethtoolGDrvInfo = 0x3

// ethtoolDrvInfo is struct ethtool_drvinfo.
type ethtoolDrvInfo struct {
	cmd         uint32
	driver      [32]byte
	version     [32]byte
	fwVersion   [32]byte
	busInfo     [32]byte
	eromVersion [32]byte
	reserved2   [12]byte
	counts      [5]uint32
}

// drvInfo returns a link's driver and bus address ("" when it has none).
func (e *ethtool) drvInfo(ifname string) (driver, bus string, err error) {
	info := ethtoolDrvInfo{cmd: ethtoolGDrvInfo}
	if _, err := e.ioctl(ifname, unsafe.Pointer(&info)); err != nil {
		return "", "", err
	}
	return cString(info.driver[:]), cString(info.busInfo[:]), nil
}

func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// observeDevices reads the node links a host device interface could take,
// only when one needs a NIC: a dump of links and one of addresses, and the
// driver of each link (NodeNICs).
func (s *session) observeDevices(p Pod, st *State) error {
	if !anyWantsDevice(p.Interfaces, *st) {
		return nil
	}
	links, err := linkList(s.host)
	if err != nil {
		return fmt.Errorf("list node links: %w", err)
	}
	addrs, err := addrList(s.host)
	if err != nil {
		return fmt.Errorf("list node addresses: %w", err)
	}
	st.Devices, err = NodeNICs(links, addrs, s.hostNS, nil, s.d.vfLookup())
	return err
}

// NodeNICs are the node's links (from one dump of its links and one of its
// addresses, in netns ns) that a host device interface could take, each
// with its driver and bus address, and why it is busy. A link is busy when
// it carries an address (but an IPv6 link-local one), is a port or the
// parent of another link, or is podnet's own: an admin's pattern never
// takes the node's uplink from under it. ask, when set, limits the
// driver reads to the links it names (the rest are left out). vfs finds
// which are SR-IOV VFs, and their PFs.
func NodeNICs(links []netlink.Link, addrs []netlink.Addr, ns netns.NsHandle, ask func(name string) bool, vfs VFLookup) ([]DeviceState, error) {
	addressed := map[int]bool{}
	for _, a := range addrs {
		if a.IP.To4() != nil || !a.IP.IsLinkLocalUnicast() {
			addressed[a.LinkIndex] = true
		}
	}
	parents := map[int]bool{}
	for _, l := range links {
		if l.Type() != "veth" {
			parents[l.Attrs().ParentIndex] = true
		}
	}
	et, err := openEthtool(ns)
	if err != nil {
		return nil, err
	}
	defer et.close()
	var out []DeviceState
	pfs := map[string]bool{}
	for _, l := range links {
		a := l.Attrs()
		if a.Flags&net.FlagLoopback != 0 || (ask != nil && !ask(a.Name)) {
			continue
		}
		d := DeviceState{Name: a.Name, MTU: a.MTU, Up: a.Flags&net.FlagUp != 0}
		// A link without a driver to report (most virtual kinds) is
		// matched by name only.
		d.Driver, d.PCI, _ = et.drvInfo(a.Name)
		if pf, index, ok := vfs(hostdev.NIC{Name: d.Name, Driver: d.Driver, PCI: d.PCI}); ok {
			d.PF, d.VF = &pf, index
			pfs[pf.Name] = true
		}
		_, stranded := originOf(a.AltNames)
		switch {
		case stranded:
			d.Busy = "given back by a pod, not yet restored"
		case strings.HasPrefix(a.Alias, HostLinkAlias):
			d.Busy = "podnet's own"
		case a.MasterIndex != 0:
			d.Busy = "a port of another link"
		case parents[a.Index]:
			d.Busy = "the parent of another link"
		case addressed[a.Index]:
			d.Busy = "carries addresses"
		}
		out = append(out, d)
	}
	// A PF whose VFs are on the node stays there: the agent sets and
	// resets their settings through it.
	for i := range out {
		if out[i].Busy == "" && pfs[out[i].Name] {
			out[i].Busy = "the PF of SR-IOV VFs"
		}
	}
	return out, nil
}

func anyWantsDevice(ifcs []Interface, st State) bool {
	for _, ifc := range ifcs {
		if wantsDevice(ifc, st) {
			return true
		}
	}
	return false
}

// observeTaken fills in what a host device in the pod says of itself: its
// origin, and its driver and bus address, which its selector is checked
// against again.
func (s *session) observeTaken(l netlink.Link, ls *LinkState) {
	o, ok := originOf(l.Attrs().AltNames)
	if !ok {
		return
	}
	s.d.devicesSeen.Store(true)
	ls.Kind, ls.Origin, ls.ParentIndex = KindHostDevice, &o, 0
	et, err := openEthtool(s.podNS)
	if err != nil {
		return
	}
	defer et.close()
	ls.Driver, ls.PCI, _ = et.drvInfo(l.Attrs().Name)
	if pf, index, ok := s.d.vfLookup()(hostdev.NIC{Name: o.Name, Driver: ls.Driver, PCI: ls.PCI}); ok {
		// Unread settings leave VF nil: the link then no longer
		// matches a VF selector and is taken anew.
		ls.VF, _ = readVF(s.host, pf, index)
	}
}

// takeDevice moves the node NIC the plan picked into the pod, renamed to
// the interface's name, in one request: the pod never sees it under its
// node name, and no name on either side is taken twice. Its origin is
// recorded first, so that a stop between the two requests leaves a NIC the
// node's sweep restores. Moving brings the NIC down; its addresses stay
// behind.
func (s *session) takeDevice(ifc Interface) error {
	l, err := s.host.LinkByName(ifc.Device)
	if err != nil {
		return fmt.Errorf("node NIC %q: %w", ifc.Device, err)
	}
	a := l.Attrs()
	if _, taken := originOf(a.AltNames); taken {
		return fmt.Errorf("node NIC %q is being given back by another pod", ifc.Device)
	}
	s.d.devicesSeen.Store(true)
	origin := originAltName(DeviceOrigin{Name: a.Name, MTU: a.MTU, Up: a.Flags&net.FlagUp != 0})
	if err := s.host.LinkAddAltName(l, origin); err != nil {
		return fmt.Errorf("node NIC %q: record its origin: %w", ifc.Device, err)
	}
	forget := func(err error) error {
		if delErr := s.host.LinkDelAltName(l, origin); delErr != nil {
			err = errors.Join(err, fmt.Errorf("forget its origin: %w", delErr))
		}
		return err
	}
	if ifc.VF != nil {
		// On the PF, before the VF leaves the node: the pod never
		// holds it with settings it was not approved.
		if err := s.takeVF(ifc); err != nil {
			return forget(err)
		}
	}
	req := s.hostRequest(unix.RTM_SETLINK, 0)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(a.Index)
	req.AddData(msg)
	req.AddData(nl.NewRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(s.podNS))))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(ifc.Name)))
	if ifc.MTU > 0 && ifc.MTU != a.MTU {
		req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(uint32(ifc.MTU))))
	}
	if ifc.MAC != nil && !bytes.Equal(ifc.MAC, a.HardwareAddr) {
		// A VF whose driver did not take the MAC set on its PF.
		req.AddData(nl.NewRtAttr(unix.IFLA_ADDRESS, []byte(ifc.MAC)))
	}
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		err = fmt.Errorf("move node NIC %q into the pod: %w", ifc.Device, err)
		if ifc.VF != nil {
			err = errors.Join(err, s.d.resetVFOf(s.host, s.hostNS, ifc.Device))
		}
		return forget(err)
	}
	return nil
}

// giveBack moves a host device in the pod back to the node, then makes it
// what it was there (restoreDevice). It travels under a name of its index:
// the kernel moves a link under its current name unless that name is taken
// in the target, and renames it after, so the name the pod gave it could
// clash on the node, and its own node name may have been taken meanwhile.
// Wherever a failure leaves it, its origin goes with it: in the pod, the
// next plan gives it back again; on the node, the sweep restores it.
func (s *session) giveBack(l netlink.Link, o DeviceOrigin) error {
	idx := l.Attrs().Index
	travel := strandedName(idx)
	err := inNetNS(s.podNS, func() error { return moveToNode(idx, s.hostNS, travel) })
	if err == nil {
		var back netlink.Link
		if back, err = s.host.LinkByName(travel); err == nil {
			// Back on the node, the pod's part is done: a name still
			// taken there is the sweep's to wait for.
			if err = s.d.restoreDevice(s.host, s.hostNS, back); errors.As(err, new(*nameTakenError)) {
				return nil
			}
			return err
		}
	}
	if still, _ := s.pod.LinkByIndex(idx); still != nil {
		return fmt.Errorf("give host device %q back to the node: %w", l.Attrs().Name, err)
	}
	// On the node under another name: found by its origin.
	if _, restoreErr := s.d.RestoreDevices(); restoreErr != nil {
		return fmt.Errorf("host device %q given back to the node: %w", o.Name, restoreErr)
	}
	return nil
}

// strandedName is the name a NIC travels back to the node under, and
// keeps there while its own name is taken.
func strandedName(index int) string { return "podnet" + strconv.Itoa(index) }

// moveToNode moves the link with index, in the calling thread's netns, to
// the node's netns under name.
func moveToNode(index int, hostNS netns.NsHandle, name string) error {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(index)
	req.AddData(msg)
	if hostNS.IsOpen() {
		req.AddData(nl.NewRtAttr(unix.IFLA_NET_NS_FD, nl.Uint32Attr(uint32(hostNS))))
	} else {
		// The node is the netns this process runs in.
		req.AddData(nl.NewRtAttr(unix.IFLA_NET_NS_PID, nl.Uint32Attr(uint32(os.Getpid()))))
	}
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(name)))
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// restoreDevice makes a NIC back on the node (in netns ns) what its
// origin says, in this order: the name (only while down), the MTU, no
// alias, a VF's settings on its PF reset, up if it was up; then it
// forgets the origin. A NIC whose name is still taken keeps its origin
// and stays down.
func (d *Dataplane) restoreDevice(h *netlink.Handle, ns netns.NsHandle, l netlink.Link) error {
	a := l.Attrs()
	o, ok := originOf(a.AltNames)
	if !ok {
		return nil
	}
	if a.Name != o.Name {
		if err := h.LinkSetDown(l); err != nil {
			return fmt.Errorf("node NIC %q: %w", a.Name, err)
		}
		if err := h.LinkSetName(l, o.Name); err != nil {
			if errors.Is(err, unix.EEXIST) {
				return &nameTakenError{link: a.Name, name: o.Name}
			}
			return fmt.Errorf("node NIC %q: rename to %q: %w", a.Name, o.Name, err)
		}
	}
	var errs []error
	if a.MTU != o.MTU {
		errs = append(errs, h.LinkSetMTU(l, o.MTU))
	}
	if a.Alias != "" {
		errs = append(errs, h.LinkSetAlias(l, ""))
	}
	errs = append(errs, d.resetVFOf(h, ns, o.Name))
	if o.Up {
		errs = append(errs, h.LinkSetUp(l))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("node NIC %q: restore: %w", o.Name, err)
	}
	if err := h.LinkDelAltName(l, originAltName(o)); err != nil {
		return fmt.Errorf("node NIC %q: forget its origin: %w", o.Name, err)
	}
	return nil
}

// ReleaseDevices gives every host device in the pod's netns back to the
// node, and touches nothing else of the pod. It is for the moment the
// runtime stops a sandbox, before it removes the netns: a virtual NIC
// would go with the netns, and a physical one come back nameless. A netns
// that is gone already is not an error.
func (d *Dataplane) ReleaseDevices(uid, netnsPath string) error {
	if exists, err := netnsExists(netnsPath); err != nil || !exists {
		return err
	}
	s, err := d.openSession(uid, netnsPath)
	if err != nil {
		if errors.Is(err, ErrNetNSGone) {
			return nil
		}
		return fmt.Errorf("pod %q netns %q: %w", uid, netnsPath, err)
	}
	defer s.close()
	links, err := linkList(s.pod)
	if err != nil {
		return fmt.Errorf("pod %q netns %q: list links: %w", uid, netnsPath, err)
	}
	var errs []error
	for _, l := range links {
		if o, ok := originOf(l.Attrs().AltNames); ok {
			if err := s.giveBack(l, o); err != nil {
				errs = append(errs, fmt.Errorf("pod %q: %w", uid, err))
			}
		}
	}
	return errors.Join(errs...)
}

// nameTakenError: a NIC back on the node cannot have its name yet.
type nameTakenError struct{ link, name string }

func (e *nameTakenError) Error() string {
	return fmt.Sprintf("node NIC %q: its name %q is taken on the node; it is left as it is until the name is free", e.link, e.name)
}

// RestoreDevices gives every host device found stranded on the node its
// name, MTU and state back: a NIC whose pod's netns went without podnet
// (the kernel returns a physical NIC as dev<ifindex>), or one podnet
// stopped in the middle of taking or giving back. It returns the names of
// the NICs restored. The agent's sweep (CollectGarbage) runs it at start,
// and then once this Dataplane has seen host devices.
func (d *Dataplane) RestoreDevices() ([]string, error) {
	h, ns, err := d.hostHandle()
	if err != nil {
		return nil, err
	}
	links, err := linkList(h)
	if err != nil {
		return nil, fmt.Errorf("list node links: %w", err)
	}
	var restored []string
	var errs []error
	for _, l := range links {
		o, ok := originOf(l.Attrs().AltNames)
		if !ok {
			continue
		}
		if err := d.restoreDevice(h, ns, l); err != nil {
			errs = append(errs, err)
			continue
		}
		restored = append(restored, o.Name)
	}
	return restored, errors.Join(errs...)
}
