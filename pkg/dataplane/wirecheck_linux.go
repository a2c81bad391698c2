package dataplane

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The wire checks' timing. RFC 5227's own (a random wait of up to 1 s,
// probes 1-2 s apart, 2 s to listen) would hold every pod for about 7 s,
// sized for hosts that sleep and links that flap; on the LAN segments
// podnet serves, an owner answers in well under a millisecond. Three
// probes still cover a lost frame.
const (
	probeCount    = 3
	probeInterval = 50 * time.Millisecond
	probeListen   = 150 * time.Millisecond // after the last probe
	gatewayWait   = time.Second
	gatewayAsk    = 200 * time.Millisecond // between asks
)

const (
	ethARP  = unix.ETH_P_ARP
	ethIPv6 = unix.ETH_P_IPV6
)

// wireChecked says whether the interface has anything to check on the
// wire.
func (ifc Interface) wireChecked() bool {
	return ifc.CheckDuplicates && len(ifc.Addresses) > 0 || len(ifc.CheckGateways) > 0
}

// checkWire runs the wire checks of the interfaces this run brought up or
// gave an address, all at once: a probe for each address
// (CheckDuplicates), then an ask of each gateway (CheckGateways). A link
// created by this run passes with its plain alias (checkingAlias). An
// interface that fails a check is taken down, so that it neither answers
// for an address another host holds nor carries traffic, and marked
// failed; its next Apply makes it anew (a new link) or brings it up again
// (one that had passed before), and so checks again.
func (s *session) checkWire(ctx context.Context, p Pod, steps []Step, failed map[string]bool) error {
	touched := map[string]bool{}
	for _, st := range steps {
		if (st.Op == OpAddAddress || st.Op == OpUp) && !failed[st.Interface] {
			touched[st.Interface] = true
		}
	}
	var checks []Interface
	for _, ifc := range p.Interfaces {
		if touched[ifc.Name] && ifc.wireChecked() {
			checks = append(checks, ifc)
		}
	}
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, ifc := range checks {
		wg.Go(func() { errs[i] = s.checkInterface(ctx, ifc) })
	}
	wg.Wait()
	for i, ifc := range checks {
		if errs[i] == nil {
			if _, created := s.created[ifc.Name]; created {
				// Passed: the plain alias lets podnet-wait end.
				if err := s.withPodLink(ifc.Name, func(l netlink.Link) error { return s.pod.LinkSetAlias(l, podAlias(ifc.Name)) }); err != nil {
					errs[i] = fmt.Errorf("interface %q: mark it checked: %w", ifc.Name, err)
				}
			}
		}
		if errs[i] == nil {
			continue
		}
		failed[ifc.Name] = true
		if err := s.withPodLink(ifc.Name, s.pod.LinkSetDown); err != nil {
			errs[i] = errors.Join(errs[i], fmt.Errorf("interface %q: take it down: %w", ifc.Name, err))
		}
	}
	return errors.Join(errs...)
}

// checkInterface probes ifc's addresses, announces the IPv4 ones that
// passed, then asks its gateways.
func (s *session) checkInterface(ctx context.Context, ifc Interface) error {
	l, err := s.pod.LinkByName(ifc.Name)
	if err != nil {
		return fmt.Errorf("interface %q: %w", ifc.Name, err)
	}
	w := wire{name: ifc.Name, index: l.Attrs().Index, mac: l.Attrs().HardwareAddr}
	var v4, v6 []net.IP
	for _, a := range ifc.Addresses {
		if ip4 := a.IP.To4(); ip4 != nil {
			v4 = append(v4, ip4)
		} else if !a.IP.IsLinkLocalUnicast() {
			v6 = append(v6, a.IP)
		}
	}
	var gw4, gw6 []net.IP
	for _, g := range ifc.CheckGateways {
		if g4 := g.To4(); g4 != nil {
			gw4 = append(gw4, g4)
		} else {
			gw6 = append(gw6, g)
		}
	}
	if len(v4)+len(gw4) > 0 {
		if w.arp, err = openPacket(s.podNS, w.index, ethARP); err != nil {
			return fmt.Errorf("interface %q: %w", ifc.Name, err)
		}
		defer unix.Close(w.arp)
	}
	if len(v6)+len(gw6) > 0 {
		if w.ip6, err = openPacket(s.podNS, w.index, ethIPv6); err != nil {
			return fmt.Errorf("interface %q: %w", ifc.Name, err)
		}
		defer unix.Close(w.ip6)
	}
	if ifc.CheckDuplicates {
		var e4, e6 error
		var wg sync.WaitGroup
		wg.Go(func() { e4 = w.probeARP(ctx, v4) })
		wg.Go(func() { e6 = w.probeND(ctx, v6) })
		wg.Wait()
		if err := errors.Join(e4, e6); err != nil {
			return err
		}
		for _, ip := range v4 {
			if err := sendTo(w.arp, w.index, ethARP, arpFrame(arpRequest, w.mac, ip, ip), broadcastMAC); err != nil {
				return fmt.Errorf("interface %q: announce %s: %w", ifc.Name, ip, err)
			}
		}
	}
	for _, g := range gw4 {
		if len(v4) > 0 {
			if err := w.askARP(ctx, g, v4[0]); err != nil {
				return err
			}
		}
	}
	for _, g := range gw6 {
		if len(v6) > 0 {
			if err := w.askND(ctx, g, v6[0]); err != nil {
				return err
			}
		}
	}
	return nil
}

// wire is one interface's packet sockets in the pod's netns.
type wire struct {
	name     string
	index    int
	mac      net.HardwareAddr
	arp, ip6 int
}

// probeARP sends probeCount ARP probes for each address and listens until
// probeListen after the last for a host that holds one.
func (w wire) probeARP(ctx context.Context, addrs []net.IP) error {
	if len(addrs) == 0 {
		return nil
	}
	return w.probe(ctx, w.arp, func() error {
		for _, ip := range addrs {
			if err := sendTo(w.arp, w.index, ethARP, arpFrame(arpRequest, w.mac, net.IPv4zero, ip), broadcastMAC); err != nil {
				return fmt.Errorf("interface %q: probe %s: %w", w.name, ip, err)
			}
		}
		return nil
	}, func(b []byte, _ net.HardwareAddr) error {
		p, ok := parseARP(b)
		if !ok {
			return nil
		}
		for _, ip := range addrs {
			if arpConflict(p, ip, w.mac) {
				return &AddressConflictError{Interface: w.name, Address: ip, MAC: p.sha}
			}
		}
		return nil
	})
}

// probeND runs duplicate address detection's probe for each address
// (neighbour solicitations from ::) and listens as probeARP does.
func (w wire) probeND(ctx context.Context, addrs []net.IP) error {
	if len(addrs) == 0 {
		return nil
	}
	return w.probe(ctx, w.ip6, func() error {
		for _, ip := range addrs {
			pkt, dst := neighborSolicitation(net.IPv6unspecified, ip, w.mac)
			if err := sendTo(w.ip6, w.index, ethIPv6, pkt, dst); err != nil {
				return fmt.Errorf("interface %q: probe %s: %w", w.name, ip, err)
			}
		}
		return nil
	}, func(b []byte, from net.HardwareAddr) error {
		p, ok := parseND(b)
		if !ok {
			return nil
		}
		for _, ip := range addrs {
			if ndConflict(p, from, ip, w.mac) {
				return &AddressConflictError{Interface: w.name, Address: ip, MAC: from}
			}
		}
		return nil
	})
}

// probe sends probeCount rounds probeInterval apart and reads fd until
// probeListen after the last, stopping at the first packet seen says is
// a conflict.
func (w wire) probe(ctx context.Context, fd int, send func() error, seen func([]byte, net.HardwareAddr) error) error {
	buf := make([]byte, 1500)
	for round := range probeCount {
		if err := send(); err != nil {
			return err
		}
		wait := probeInterval
		if round == probeCount-1 {
			wait = probeListen
		}
		for deadline := time.Now().Add(wait); ; {
			n, from, err := recvUntil(ctx, fd, buf, deadline)
			if err != nil {
				return fmt.Errorf("interface %q: %w", w.name, err)
			}
			if n < 0 {
				break
			}
			if err := seen(buf[:n], from); err != nil {
				return err
			}
		}
	}
	return nil
}

// askARP asks for gw from src until gw answers or gatewayWait passes.
func (w wire) askARP(ctx context.Context, gw, src net.IP) error {
	return w.ask(ctx, w.arp, gw, func() error {
		return sendTo(w.arp, w.index, ethARP, arpFrame(arpRequest, w.mac, src, gw), broadcastMAC)
	}, func(b []byte, _ net.HardwareAddr) bool {
		p, ok := parseARP(b)
		return ok && p.op == arpReply && p.spa.Equal(gw)
	})
}

// askND solicits gw from src until gw advertises itself or gatewayWait
// passes.
func (w wire) askND(ctx context.Context, gw, src net.IP) error {
	pkt, dst := neighborSolicitation(src, gw, w.mac)
	return w.ask(ctx, w.ip6, gw, func() error {
		return sendTo(w.ip6, w.index, ethIPv6, pkt, dst)
	}, func(b []byte, _ net.HardwareAddr) bool {
		p, ok := parseND(b)
		return ok && p.typ == icmpv6NA && p.target.Equal(gw)
	})
}

func (w wire) ask(ctx context.Context, fd int, gw net.IP, send func() error, answered func([]byte, net.HardwareAddr) bool) error {
	buf := make([]byte, 1500)
	end := time.Now().Add(gatewayWait)
	for time.Now().Before(end) {
		if err := send(); err != nil {
			return fmt.Errorf("interface %q: ask gateway %s: %w", w.name, gw, err)
		}
		deadline := time.Now().Add(gatewayAsk)
		if deadline.After(end) {
			deadline = end
		}
		for {
			n, from, err := recvUntil(ctx, fd, buf, deadline)
			if err != nil {
				return fmt.Errorf("interface %q: %w", w.name, err)
			}
			if n < 0 {
				break
			}
			if answered(buf[:n], from) {
				return nil
			}
		}
	}
	return &GatewayUnansweredError{Interface: w.name, Gateway: gw, Waited: gatewayWait}
}

// openPacket opens a packet socket for proto on the link ifindex of ns,
// with the link-layer header left to the kernel. It is created unbound to
// a protocol and bound with the link, so no other link's packets queue on
// it.
func openPacket(ns netns.NsHandle, ifindex int, proto uint16) (int, error) {
	fd := -1
	err := inNetNS(ns, func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return fmt.Errorf("packet socket: %w", err)
		}
		return nil
	})
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifindex}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind packet socket: %w", err)
	}
	return fd, nil
}

func sendTo(fd, ifindex int, proto uint16, b []byte, dst net.HardwareAddr) error {
	sa := &unix.SockaddrLinklayer{Protocol: htons(proto), Ifindex: ifindex, Halen: uint8(len(dst))}
	copy(sa.Addr[:], dst)
	return unix.Sendto(fd, b, 0, sa)
}

// recvUntil reads one packet that reached the link from outside, returning
// its length and sender MAC, or n = -1 once deadline has passed.
func recvUntil(ctx context.Context, fd int, buf []byte, deadline time.Time) (int, net.HardwareAddr, error) {
	for {
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return -1, nil, ctx.Err()
		}
		tv := unix.NsecToTimeval(max(left, time.Millisecond).Nanoseconds())
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return 0, nil, fmt.Errorf("receive timeout: %w", err)
		}
		n, from, err := unix.Recvfrom(fd, buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, nil, fmt.Errorf("receive: %w", err)
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok || ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		return n, net.HardwareAddr(append([]byte(nil), ll.Addr[:ll.Halen]...)), nil
	}
}

// htons is v in network byte order, as the packet socket calls take it.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}
