package dataplane

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/portsecurity"
)

// podEgress is the egress table of a test pod's netns.
func podEgress(t *testing.T, podNS string) portsecurity.Egress {
	t.Helper()
	fd, err := unix.Open(filepath.Join("/run/netns", podNS), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return portsecurity.Egress{NetNS: fd}
}

func egressLinks(t *testing.T, e portsecurity.Egress) []string {
	t.Helper()
	links, err := e.Links()
	if err != nil {
		t.Fatal(err)
	}
	return links
}

// TestRootEgressSecurityFollowsThePod runs the egress rules of a macvlan
// and an ipvlan pod link through the pod's life: written when the link is
// made, following its addresses, off when the network turns port security
// off, gone with the interface. The pods' traffic on their shared parent
// shows it: an address the pod holds without podnet's approval reaches no
// one until approved.
func TestRootEgressSecurityFollowsThePod(t *testing.T) {
	for _, kc := range []struct {
		kind Kind
		mode string
	}{{KindMacvlan, "bridge"}, {KindIPVlan, "l2"}} {
		t.Run(string(kc.kind), func(t *testing.T) {
			requireKernel(t, string(kc.kind))
			d, node := newNode(t)
			parent, _ := addOutside(t, node)
			nsA, a := newPod(t)
			nsB, b := newPod(t)
			ifcOf := func(addrs ...string) Interface {
				ifc := Interface{Name: "net1", Kind: kc.kind, Master: parent, Mode: kc.mode}
				for _, s := range addrs {
					ifc.Addresses = append(ifc.Addresses, cidr(t, s))
				}
				return ifc
			}
			a.Interfaces = []Interface{ifcOf("192.168.81.1/24", "fd00:81::1/64")}
			b.Interfaces = []Interface{ifcOf("192.168.81.2/24", "fd00:81::2/64")}
			apply(t, d, a)
			apply(t, d, b)
			egressA := podEgress(t, nsA)
			if got := egressLinks(t, egressA); !slices.Equal(got, []string{"net1"}) {
				t.Fatalf("links with egress rules in pod a: %v, want net1", got)
			}
			requirePings(t, "approved addresses", nsA, "192.168.81.2", "fd00:81::2")

			run(t, "ip", "-n", nsA, "addr", "add", "192.168.81.99/24", "dev", "net1")
			if pingFrom(nsA, "192.168.81.99", "192.168.81.2") {
				t.Fatal("a source address the pod was not given left its link")
			}
			a.Interfaces = []Interface{ifcOf("192.168.81.1/24", "192.168.81.99/24", "fd00:81::1/64")}
			apply(t, d, a)
			if !pingFrom(nsA, "192.168.81.99", "192.168.81.2") {
				t.Fatal("an address added to the pod at runtime does not leave its link")
			}

			a.Interfaces[0].PortSecurityDisabled = true
			apply(t, d, a)
			if got := egressLinks(t, egressA); len(got) != 0 {
				t.Fatalf("port security off, but links %v keep rules", got)
			}
			run(t, "ip", "-n", nsA, "addr", "add", "192.168.81.98/24", "dev", "net1")
			if !pingFrom(nsA, "192.168.81.98", "192.168.81.2") {
				t.Fatal("port security off, but an unapproved source address is dropped")
			}

			a.Interfaces[0].PortSecurityDisabled = false
			apply(t, d, a)
			if pingFrom(nsA, "192.168.81.98", "192.168.81.2") {
				t.Fatal("port security back on, but an unapproved source address leaves the link")
			}
			a.Interfaces = nil
			apply(t, d, a)
			if got := egressLinks(t, egressA); len(got) != 0 {
				t.Fatalf("interface removed, but links %v keep rules", got)
			}
			if got := egressLinks(t, podEgress(t, nsB)); !slices.Equal(got, []string{"net1"}) {
				t.Fatalf("pod b's egress rules: %v, want net1", got)
			}
			if err := d.Detach(context.Background(), b.UID, b.NetNS); err != nil {
				t.Fatal(err)
			}
		})
	}
}
