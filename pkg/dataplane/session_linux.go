package dataplane

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// hostHandle returns the netlink handle bound to the node's netns and that
// netns, opening them on first use. A failure is not remembered, so a later
// call tries again.
func (d *Dataplane) hostHandle() (*netlink.Handle, netns.NsHandle, error) {
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	if d.host != nil {
		return d.host, d.hostNS, nil
	}
	nsh := netns.None()
	if d.HostNetNS != "" {
		var err error
		if nsh, err = netns.GetFromPath(d.HostNetNS); err != nil {
			return nil, nsh, fmt.Errorf("node netns %q: %w", d.HostNetNS, err)
		}
	}
	h, err := netlink.NewHandleAt(nsh, unix.NETLINK_ROUTE)
	if err != nil {
		nsh.Close()
		return nil, nsh, fmt.Errorf("node netns %q: %w", d.HostNetNS, err)
	}
	raw, err := nl.GetNetlinkSocketAt(nsh, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		nsh.Close()
		return nil, nsh, fmt.Errorf("node netns %q: %w", d.HostNetNS, err)
	}
	d.host, d.hostNS, d.hostRaw = h, nsh, &nl.SocketHandle{Socket: raw}
	return h, nsh, nil
}

// Close releases the node netlink handle and nftables connection. The Dataplane may be used again
// afterwards; it then opens a new one.
func (d *Dataplane) Close() {
	d.hostMu.Lock()
	defer d.hostMu.Unlock()
	if d.nft != nil {
		d.nft.Close()
		d.nft = nil
	}
	if d.host != nil {
		d.host.Close()
		d.hostRaw.Close()
		d.hostNS.Close()
		d.host, d.hostNS, d.hostRaw = nil, netns.None(), nil
	}
}

// openHandle opens a route netlink handle in the netns at path ("" = the
// calling thread's netns).
func openHandle(path string) (*netlink.Handle, error) {
	if path == "" {
		return netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	return netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
}

// session is the work on one pod: handles on both sides and what this run
// created, so that a failed interface is taken away again.
type session struct {
	d    *Dataplane
	uid  string
	path string
	host *netlink.Handle
	// hostRaw is the Dataplane's raw route socket in hostNS.
	hostRaw *nl.SocketHandle
	// hostNS is the node's netns (netns.None() for the process' own).
	hostNS netns.NsHandle
	pod    *netlink.Handle
	// podRaw is a raw route socket in the pod's netns.
	podRaw *nl.SocketHandle
	podNS  netns.NsHandle
	// links caches pod links by name, so that a step does not look up
	// what the previous one already knew.
	links map[string]netlink.Link
	// ports caches node veth ends by name, for the same reason.
	ports map[string]netlink.Link
	// created are the pod interfaces this run created.
	created map[string]Interface
	// want are the desired interfaces by name, for the steps that need
	// more than the step says (port security at port-up).
	want map[string]Interface
	// touched are the pod links this run set up or gave a new MAC since
	// it read them: their cached state is stale.
	touched map[string]bool
	// linkLocal are the IPv6 link-local addresses of podnet's pod links
	// as last observed, for port security.
	linkLocal map[string][]net.IP
	// secured are the fingerprints of the port rules this run wrote or
	// found in place, by port, so that they are not read again.
	secured map[string]string
	// mainDefaults are the main table's default routes by family, as the
	// last observePod read them with the pod's other routes; a family is
	// taken out once used (ensureDefaultRoutes), so that a later step
	// reads again.
	mainDefaults map[int][]netlink.Route
	// firstAttach: the plan found none of podnet's links in the pod.
	firstAttach bool
	// planned is the state the plan read.
	planned State
	// bridges are the indexes of the bridges the plan read, by name, and
	// bridgesChangedAtPlan the Dataplane's count of changed bridges when
	// it began to read them.
	bridges              map[string]int
	bridgesChangedAtPlan uint64
	// inBridge are the bridges createVeth put node ends into, by port.
	inBridge map[string]int
	// policy is what the Dataplane wrote into the pod's policy table.
	policy *podPolicy
}

// ErrNetNSGone is wrapped by the errors of Apply, Plan and Observe when the
// pod's netns path does not exist (the pod sandbox is gone).
var ErrNetNSGone = errors.New("netns does not exist")

func (d *Dataplane) openSession(uid, path string) (*session, error) {
	host, hostNS, err := d.hostHandle()
	if err != nil {
		return nil, err
	}
	d.hostMu.Lock()
	hostRaw := d.hostRaw
	d.hostMu.Unlock()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNetNSGone
		}
		return nil, fmt.Errorf("open netns: %w", err)
	}
	pod, podRaw, err := podSockets(ns)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netlink handle in netns: %w", err)
	}
	return &session{
		d: d, uid: uid, path: path, host: host, hostRaw: hostRaw, hostNS: hostNS, pod: pod, podRaw: podRaw, podNS: ns,
		links: map[string]netlink.Link{}, ports: map[string]netlink.Link{}, created: map[string]Interface{},
		touched: map[string]bool{}, linkLocal: map[string][]net.IP{}, secured: map[string]string{}, bridges: map[string]int{}, inBridge: map[string]int{},
	}, nil
}

// podSockets opens the library's route handle and a raw route socket in
// the pod's netns, both in one visit of a locked thread (opening each
// "at" the netns would visit it twice).
func podSockets(ns netns.NsHandle) (*netlink.Handle, *nl.SocketHandle, error) {
	var h *netlink.Handle
	var raw *nl.NetlinkSocket
	err := inNetNS(ns, func() error {
		var err error
		if h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			return err
		}
		// None: the socket is opened in the thread's netns, the pod's.
		if raw, err = nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE); err != nil {
			h.Close()
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return h, &nl.SocketHandle{Socket: raw}, nil
}

func (s *session) close() {
	s.pod.Close()
	s.podRaw.Close()
	s.podNS.Close()
}

// netnsExists tells a gone netns apart from one that cannot be read.
func netnsExists(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}
