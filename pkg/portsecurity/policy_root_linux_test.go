package portsecurity

import (
	"fmt"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"golang.org/x/sys/unix"
)

const (
	policyTCP = 8080
	policyUDP = 5353
)

// serve answers TCP connections and UDP datagrams (echoing them) on the
// pod's addresses, from sockets made in its netns.
func serve(t *testing.T, p *pod) {
	t.Helper()
	err := ns.WithNetNSPath(filepath.Join("/run/netns", p.ns), func(ns.NetNS) error {
		tl, err := net.Listen("tcp", fmt.Sprintf(":%d", policyTCP))
		if err != nil {
			return err
		}
		t.Cleanup(func() { tl.Close() })
		go func() {
			for {
				c, err := tl.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("ok"))
				c.Close()
			}
		}()
		ul, err := net.ListenPacket("udp", fmt.Sprintf(":%d", policyUDP))
		if err != nil {
			return err
		}
		t.Cleanup(func() { ul.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				n, from, err := ul.ReadFrom(buf)
				if err != nil {
					return
				}
				ul.WriteTo(buf[:n], from)
			}
		}()
		return nil
	})
	if err != nil {
		t.Fatalf("serve in %s: %v", p.ns, err)
	}
}

// reaches says whether a probe from one pod to another's address gets an
// answer: a TCP connection that reads the server's word, a UDP datagram
// echoed, or an ICMP echo reply.
func reaches(t *testing.T, from *pod, to net.IP, proto string, port int) bool {
	t.Helper()
	if proto == "icmp" {
		args := []string{"netns", "exec", from.ns, "busybox", "ping", "-c", "1", "-W", "1"}
		if to.To4() == nil {
			args = append(args, "-I", "eth1")
		}
		return exec.Command("ip", append(args, to.String())...).Run() == nil
	}
	ok := false
	err := ns.WithNetNSPath(filepath.Join("/run/netns", from.ns), func(ns.NetNS) error {
		c, err := net.DialTimeout(proto, net.JoinHostPort(to.String(), fmt.Sprint(port)), 700*time.Millisecond)
		if err != nil {
			return nil
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(700 * time.Millisecond))
		if proto == "udp" {
			if _, err := c.Write([]byte("hi")); err != nil {
				return nil
			}
		}
		buf := make([]byte, 8)
		n, _ := c.Read(buf)
		ok = n > 0
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// policyConn is a PolicyConn on the pod's netns.
func policyConn(t *testing.T, p *pod) *PolicyConn {
	t.Helper()
	fd, err := unix.Open(filepath.Join("/run/netns", p.ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return &PolicyConn{NetNS: fd}
}

func allow(peer string, proto uint8, lo, hi uint16) Allow {
	return Allow{Peer: netip.MustParsePrefix(peer), Protocol: proto, PortLo: lo, PortHi: hi}
}

func anything(peer string) Allow {
	return Allow{Peer: netip.MustParsePrefix(peer), AnyProtocol: true, PortHi: 65535}
}

// TestRootPolicy: pod links isolated by their policy pass only what an
// element allows, by peer, protocol and port, in both families and both
// directions; replies to allowed traffic pass; a policy rewritten by a
// new connection (an agent that started again) keeps nothing of the old;
// removed, everything passes again.
func TestRootPolicy(t *testing.T) {
	l := newLAN(t)
	a, b, c := l.addPod(t, "a", 1, true), l.addPod(t, "b", 2, true), l.addPod(t, "c", 3, true)
	for _, p := range []*pod{a, b, c} {
		serve(t, p)
	}
	pa, pb := policyConn(t, a), policyConn(t, b)
	type cell struct {
		from, to *pod
		proto    string
		port     int
		want     bool
	}
	check := func(t *testing.T, cells []cell) {
		t.Helper()
		for _, cl := range cells {
			for _, dst := range []net.IP{cl.to.ip4, cl.to.ip6} {
				if got := reaches(t, cl.from, dst, cl.proto, cl.port); got != cl.want {
					t.Errorf("%s -> %s %s/%d: reaches %t, want %t", cl.from.ns, dst, cl.proto, cl.port, got, cl.want)
				}
			}
		}
	}
	t.Run("NoPolicyEverythingPasses", func(t *testing.T) {
		check(t, []cell{{a, b, "tcp", policyTCP, true}, {a, b, "udp", policyUDP, true}, {c, b, "icmp", 0, true}})
	})

	t.Run("IngressFromOnePeerOnOnePort", func(t *testing.T) {
		err := pb.Ensure(PolicyPort{Port: "eth1", In: PolicyDirection{Isolated: true, Allow: []Allow{
			allow("10.9.0.1/32", unix.IPPROTO_TCP, policyTCP, policyTCP),
			allow("fd00:9::1/128", unix.IPPROTO_TCP, 8000, 8100),
		}}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, []cell{
			{a, b, "tcp", policyTCP, true},
			{a, b, "udp", policyUDP, false},
			{a, b, "icmp", 0, false},
			{c, b, "tcp", policyTCP, false},
			// b's own traffic out, and the replies to it, pass.
			{b, a, "tcp", policyTCP, true},
			{b, c, "udp", policyUDP, true},
			{b, a, "icmp", 0, true},
			{a, c, "udp", policyUDP, true},
		})
	})

	t.Run("EgressToOnePrefixAnyProtocol", func(t *testing.T) {
		err := pa.Ensure(PolicyPort{Port: "eth1", Out: PolicyDirection{Isolated: true, Allow: []Allow{
			anything("10.9.0.2/31"), anything("fd00:9::3/128"),
		}}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, []cell{
			{a, c, "tcp", policyTCP, true},
			{a, c, "icmp", 0, true},
			// 10.9.0.2 is inside 10.9.0.2/31, but b's ingress allows a on
			// TCP only, and fd00:9::2 is outside a's egress.
			{a, b, "udp", policyUDP, false},
			{c, a, "tcp", policyTCP, true},
		})
		if !reaches(t, a, b.ip4, "tcp", policyTCP) || reaches(t, a, b.ip6, "tcp", policyTCP) {
			t.Error("a -> b on TCP: want 10.9.0.2 reached (in a's egress and b's ingress) and fd00:9::2 not (outside a's egress)")
		}
	})

	t.Run("RewrittenByANewConnection", func(t *testing.T) {
		fresh := &PolicyConn{NetNS: pb.NetNS}
		err := fresh.Ensure(PolicyPort{Port: "eth1", In: PolicyDirection{Isolated: true, Allow: []Allow{
			anything("10.9.0.3/32"), anything("fd00:9::3/128"),
		}}})
		if err != nil {
			t.Fatal(err)
		}
		check(t, []cell{{c, b, "udp", policyUDP, true}, {a, b, "tcp", policyTCP, false}})
		if err := fresh.Remove("eth1"); err != nil {
			t.Fatal(err)
		}
		if err := pa.Remove("eth1"); err != nil {
			t.Fatal(err)
		}
		check(t, []cell{{a, b, "udp", policyUDP, true}, {a, b, "icmp", 0, true}, {c, a, "tcp", policyTCP, true}})
	})

	t.Run("BadInputIsRefused", func(t *testing.T) {
		err := pb.Ensure(PolicyPort{Port: "eth1", In: PolicyDirection{Isolated: true, Allow: []Allow{allow("10.9.0.1/32", unix.IPPROTO_TCP, 90, 80)}}})
		if err == nil || !strings.Contains(err.Error(), "port range 90-80 is descending") {
			t.Fatalf("a descending range: %v", err)
		}
	})
}

// TestRootPolicyPorts: Ports of a netns without the table says none and
// leaves it without; ports written in one Ensure are read back by a new
// connection, and those removed are gone.
func TestRootPolicyPorts(t *testing.T) {
	l := newLAN(t)
	p := l.addPod(t, "a", 1, false)
	pc := policyConn(t, p)
	hasTable := func() bool {
		t.Helper()
		c, err := Table{NetNS: pc.NetNS}.conn()
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseLasting()
		ok, err := hasPolicyTable(c)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if ports, err := pc.Ports(); err != nil || len(ports) != 0 || hasTable() {
		t.Fatalf("Ports of a netns without the table = %v, %v; table made: %t", ports, err, hasTable())
	}
	isolated := PolicyDirection{Isolated: true, Allow: []Allow{anything("10.9.0.2/32")}}
	if err := pc.Ensure(PolicyPort{Port: "eth1", In: isolated}, PolicyPort{Port: "net2", Out: PolicyDirection{Isolated: true}}); err != nil {
		t.Fatal(err)
	}
	fresh := &PolicyConn{NetNS: pc.NetNS}
	if ports, err := fresh.Ports(); err != nil || !slices.Equal(ports, []string{"eth1", "net2"}) {
		t.Fatalf("Ports read back = %v, %v; want [eth1 net2]", ports, err)
	}
	if err := fresh.Remove("net2"); err != nil {
		t.Fatal(err)
	}
	if ports, err := (&PolicyConn{NetNS: pc.NetNS}).Ports(); err != nil || !slices.Equal(ports, []string{"eth1"}) {
		t.Fatalf("Ports after removing net2 = %v, %v; want [eth1]", ports, err)
	}
}
