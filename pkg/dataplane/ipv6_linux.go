package dataplane

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// ipv6JoinWait bounds how long awaitIPv6 waits for the kernel.
const ipv6JoinWait = 2 * time.Second

// awaitIPv6 waits until the pod has joined the solicited-node group of every
// IPv6 address of the interfaces this run brought up or gave an address.
// Without DAD an address is usable at once, but the kernel joins the group
// from a work queue: a neighbour solicitation arriving before that is
// dropped (macvlan even filters multicast by the joined groups), and the
// peer only retries after a second. Waiting here, usually well under a
// millisecond, makes "applied" mean "reachable". It gives up silently after
// ipv6JoinWait or when ctx ends: the addresses are in place, only the first
// packets may be slow.
func (s *session) awaitIPv6(ctx context.Context, p Pod, steps []Step, failed map[string]bool) {
	touched := map[string]bool{}
	for _, st := range steps {
		if (st.Op == OpAddAddress || st.Op == OpUp) && !failed[st.Interface] {
			touched[st.Interface] = true
		}
	}
	want := map[string][]net.IP{}
	for _, ifc := range p.Interfaces {
		for _, a := range ifc.Addresses {
			if touched[ifc.Name] && a.IP.To4() == nil {
				want[ifc.Name] = append(want[ifc.Name], solicitedNode(a.IP))
			}
		}
	}
	if len(want) == 0 {
		return
	}
	deadline := time.Now().Add(ipv6JoinWait)
	for pause := 100 * time.Microsecond; time.Now().Before(deadline) && ctx.Err() == nil; pause = min(2*pause, 20*time.Millisecond) {
		groups, err := ipv6Groups(s.podNS)
		if err != nil {
			return
		}
		if s.joined(want, groups) {
			return
		}
		time.Sleep(pause)
	}
}

// joined reports whether every wanted group is joined on its interface.
func (s *session) joined(want map[string][]net.IP, groups map[int][]net.IP) bool {
	for name, ips := range want {
		l, ok := s.links[name]
		if !ok {
			continue
		}
		for _, ip := range ips {
			if !slices.ContainsFunc(groups[l.Attrs().Index], ip.Equal) {
				return false
			}
		}
	}
	return true
}

// ipv6Groups returns the IPv6 multicast groups joined in the netns, by
// ifindex.
func ipv6Groups(ns netns.NsHandle) (map[int][]net.IP, error) {
	msgs, err := nldump.Retry(func() ([][]byte, error) {
		req := nl.NewNetlinkRequest(unix.RTM_GETMULTICAST, unix.NLM_F_DUMP)
		req.AddData(nl.NewIfAddrmsg(unix.AF_INET6))
		// Depending on the kernel version the answers are typed
		// RTM_GETMULTICAST or RTM_NEWMULTICAST: take either.
		return rawRequest(ns, req, 0)
	})
	if err != nil {
		return nil, err
	}
	out := map[int][]net.IP{}
	for _, m := range msgs {
		msg := nl.DeserializeIfAddrmsg(m)
		attrs, err := nl.ParseRouteAttr(m[msg.Len():])
		if err != nil {
			return nil, err
		}
		for _, a := range attrs {
			if a.Attr.Type == unix.IFA_MULTICAST && len(a.Value) == net.IPv6len {
				out[int(msg.Index)] = append(out[int(msg.Index)], net.IP(a.Value))
			}
		}
	}
	return out, nil
}

// solicitedNode is the multicast group that neighbour solicitations for ip
// are sent to (RFC 4291 2.7.1).
func solicitedNode(ip net.IP) net.IP {
	g := net.ParseIP("ff02::1:ff00:0")
	copy(g[13:], ip.To16()[13:])
	return g
}
