package agent

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/pkg/policy"
)

// NetlinkNodeMACs reads the MACs of the node's network namespace through
// netlink, read-only: two dumps, the links and the bridges' FDB entries.
type NetlinkNodeMACs struct {
	// NetNS is the node's network namespace ("": the agent's own, with
	// hostNetwork).
	NetNS string
}

// Seen implements NodeMACs.
func (n NetlinkNodeMACs) Seen(_ context.Context, uid string) ([]policy.NodeMAC, error) {
	h, ns, err := n.handle()
	if err != nil {
		return nil, err
	}
	defer h.Close()
	defer ns.Close()
	links, err := nldump.Links(h)
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	// The node ends of the pod's own interfaces are marked
	// "podnet:<uid>:<interface>" (dataplane's port alias).
	own := dataplane.HostLinkAlias + ":" + uid + ":"
	names := make(map[int]string, len(links))
	mine := map[int]bool{}
	var out []policy.NodeMAC
	for _, l := range links {
		a := l.Attrs()
		names[a.Index] = a.Name
		if strings.HasPrefix(a.Alias, own) {
			mine[a.Index] = true
			continue
		}
		if usable(a.HardwareAddr) {
			out = append(out, policy.NodeMAC{MAC: a.HardwareAddr.String(), Of: fmt.Sprintf("%s %q", l.Type(), a.Name)})
		}
	}
	fdb, err := nldump.Neighs(h, 0, unix.AF_BRIDGE)
	if err != nil {
		return nil, fmt.Errorf("list the bridges' FDB entries: %w", err)
	}
	for _, e := range fdb {
		if mine[e.LinkIndex] || !usable(e.HardwareAddr) {
			continue
		}
		of := fmt.Sprintf("an FDB entry on port %q", names[e.LinkIndex])
		if e.MasterIndex != 0 {
			of += fmt.Sprintf(" of bridge %q", names[e.MasterIndex])
		}
		out = append(out, policy.NodeMAC{MAC: e.HardwareAddr.String(), Of: of})
	}
	return out, nil
}

// usable says whether mac could be a pod's: an Ethernet unicast MAC, not
// all zeros (loopback's, a VXLAN device's default entry).
func usable(mac net.HardwareAddr) bool {
	return len(mac) == 6 && mac[0]&1 == 0 && mac.String() != "00:00:00:00:00:00"
}

func (n NetlinkNodeMACs) handle() (*netlink.Handle, netns.NsHandle, error) {
	if n.NetNS == "" {
		h, err := netlink.NewHandle()
		return h, netns.None(), err
	}
	ns, err := netns.GetFromPath(n.NetNS)
	if err != nil {
		return nil, netns.None(), fmt.Errorf("open netns %q: %w", n.NetNS, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		return nil, netns.None(), fmt.Errorf("netlink in netns %q: %w", n.NetNS, err)
	}
	return h, ns, nil
}
