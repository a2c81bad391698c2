// Command l2spoof is the e2e suite's spoofing pod: copied into a pod that
// holds NET_RAW, it sends l2frame.Attack's frames out of an interface
// ("send"), or, in an observing pod, reports which of them arrived
// ("sniff"). Test tooling only.
//
//	l2spoof send  -i net1 -self MAC,IP4,IP6 -victim ... -peer ... -marker TEXT
//	l2spoof sniff -i net1 -self ... -victim ... -peer ... -marker TEXT
//	l2spoof advertise -i eth1 -prefix fd00:69:: -every 100ms
//	l2spoof answer -i net1 -ip 192.168.67.40 -timeout 2m
//
// sniff prints "ready" once it listens, "seen <case>" for every case frame
// it receives, and "done" when the marker arrives. advertise plays a
// router: it sends a router advertisement of the /64 prefix, from the
// link's EUI-64 link-local address, every -every until killed. answer
// claims an address the pod does not hold: it answers every ARP request
// for -ip (an RFC 5227 probe too) with a reply from the link's MAC,
// prints "ready" once it listens and "answered <asker MAC>" for each,
// until -timeout.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/portsecurity"
	"podnet.io/podnet/test/l2frame"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "l2spoof:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: l2spoof send|sniff -i IFACE -self MAC,IP4,IP6 -victim MAC,IP4,IP6 -peer MAC,IP4,IP6 -marker TEXT")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	ifname := fs.String("i", "net1", "interface")
	self := fs.String("self", "", "this pod: MAC,IPv4,IPv6")
	victim := fs.String("victim", "", "the pod to pose as: MAC,IPv4,IPv6")
	peer := fs.String("peer", "", "the observing pod: MAC,IPv4,IPv6")
	marker := fs.String("marker", "", "text of the closing marker frame")
	timeout := fs.Duration("timeout", 2*time.Minute, "sniff: give up after this long")
	prefix := fs.String("prefix", "", "advertise: the /64 prefix")
	every := fs.Duration("every", 100*time.Millisecond, "advertise: the interval")
	ip := fs.String("ip", "", "answer: the IPv4 address to claim")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "advertise":
		return advertise(*ifname, net.ParseIP(*prefix), *every)
	case "answer":
		return answer(*ifname, net.ParseIP(*ip).To4(), *timeout)
	}
	var hosts [3]l2frame.Host
	for i, s := range []string{*self, *victim, *peer} {
		h, err := parseHost(s)
		if err != nil {
			return err
		}
		hosts[i] = h
	}
	if *marker == "" {
		return errors.New("-marker: must not be empty")
	}
	cases := l2frame.Attack(hosts[0], hosts[1], hosts[2])
	ifc, err := net.InterfaceByName(*ifname)
	if err != nil {
		return err
	}
	switch args[0] {
	case "send":
		return send(ifc, append(frames(cases), l2frame.Marker(hosts[0], *marker)))
	case "sniff":
		return sniff(ifc, cases, []byte(*marker), *timeout)
	}
	return fmt.Errorf("unknown mode %q: send or sniff", args[0])
}

func advertise(ifname string, prefix net.IP, every time.Duration) error {
	if prefix == nil || prefix.To4() != nil {
		return errors.New("-prefix: want an IPv6 prefix")
	}
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	ra := l2frame.Eth(l2frame.AllNodes, ifc.HardwareAddr, unix.ETH_P_IPV6,
		l2frame.RA(portsecurity.LinkLocalOf(ifc.HardwareAddr), ifc.HardwareAddr, uint32(ifc.MTU), prefix))
	fd, err := packetSocket(ifc, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		if _, err := unix.Write(fd, ra); err != nil {
			return fmt.Errorf("send on %s: %w", ifname, err)
		}
		time.Sleep(every)
	}
}

func answer(ifname string, ip net.IP, timeout time.Duration) error {
	if ip == nil {
		return errors.New("-ip: want an IPv4 address")
	}
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return err
	}
	fd, err := packetSocket(ifc, unix.ETH_P_ARP)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(timeout)
	tv := unix.NsecToTimeval(time.Second.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	fmt.Println("ready")
	buf := make([]byte, 1500)
	for time.Now().Before(deadline) {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return fmt.Errorf("listen on %s: %w", ifname, err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		asker, ok := arpRequestFor(buf[:n], ip)
		if !ok {
			continue
		}
		// Broadcast, as a prober hears a reply to a probe (RFC 5227).
		reply := l2frame.Eth(broadcast, ifc.HardwareAddr, unix.ETH_P_ARP,
			l2frame.ARP(2, ifc.HardwareAddr, ip, asker.mac, asker.ip))
		if _, err := unix.Write(fd, reply); err != nil && !errors.Is(err, unix.ENOBUFS) {
			return fmt.Errorf("send on %s: %w", ifname, err)
		}
		fmt.Println("answered", asker.mac)
	}
	return nil
}

var broadcast = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

type arpAsker struct {
	mac net.HardwareAddr
	ip  net.IP
}

// arpRequestFor reads an Ethernet frame as an ARP request (or probe) for
// ip, and returns who asked.
func arpRequestFor(frame []byte, ip net.IP) (arpAsker, bool) {
	const eth, arpLen = 14, 28
	if len(frame) < eth+arpLen || frame[12] != 0x08 || frame[13] != 0x06 {
		return arpAsker{}, false
	}
	a := frame[eth:]
	if a[6] != 0 || a[7] != 1 || !net.IP(a[24:28]).Equal(ip) {
		return arpAsker{}, false
	}
	return arpAsker{mac: net.HardwareAddr(append([]byte(nil), a[8:14]...)), ip: net.IP(append([]byte(nil), a[14:18]...))}, true
}

func frames(cases []l2frame.Case) [][]byte {
	var out [][]byte
	for _, c := range cases {
		out = append(out, c.Frame)
	}
	return out
}

// parseHost reads "MAC,IPv4,IPv6"; the link-local address is the one
// derived from the MAC.
func parseHost(s string) (l2frame.Host, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return l2frame.Host{}, fmt.Errorf("host %q: want MAC,IPv4,IPv6", s)
	}
	mac, err := net.ParseMAC(parts[0])
	if err != nil {
		return l2frame.Host{}, fmt.Errorf("host %q: %w", s, err)
	}
	ip4, ip6 := net.ParseIP(parts[1]).To4(), net.ParseIP(parts[2])
	if ip4 == nil || ip6 == nil || ip6.To4() != nil {
		return l2frame.Host{}, fmt.Errorf("host %q: want an IPv4 and an IPv6 address", s)
	}
	return l2frame.Host{MAC: mac, IP4: ip4, IP6: ip6, LinkLocal: portsecurity.LinkLocalOf(mac)}, nil
}

func packetSocket(ifc *net.Interface, proto uint16) (int, error) {
	p := proto<<8 | proto>>8
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(p))
	if err != nil {
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: p, Ifindex: ifc.Index}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind to %s: %w", ifc.Name, err)
	}
	return fd, nil
}

func send(ifc *net.Interface, frames [][]byte) error {
	fd, err := packetSocket(ifc, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	dropped := 0
	for _, f := range frames {
		// ENOBUFS: a filter on the link's own egress dropped the frame
		// (port security on macvlan and ipvlan links).
		if _, err := unix.Write(fd, f); errors.Is(err, unix.ENOBUFS) {
			dropped++
		} else if err != nil {
			return fmt.Errorf("send on %s: %w", ifc.Name, err)
		}
	}
	fmt.Println("sent", len(frames), "dropped on the way out", dropped)
	return nil
}

func sniff(ifc *net.Interface, cases []l2frame.Case, marker []byte, timeout time.Duration) error {
	fd, err := packetSocket(ifc, unix.ETH_P_ALL)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	fmt.Println("ready")
	buf := make([]byte, 65536)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("waiting for the marker: %w", err)
		}
		got := l2frame.Payload(buf[:n])
		if bytes.Contains(got, marker) {
			fmt.Println("done")
			return nil
		}
		for _, c := range cases {
			if bytes.HasPrefix(got, l2frame.Payload(c.Frame)) {
				fmt.Println("seen", c.Name)
			}
		}
	}
}
