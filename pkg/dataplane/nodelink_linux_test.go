package dataplane

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// linkMessage is an RTM_NEWLINK answer as the kernel sends it, without
// the netlink header.
func linkMessage(index int32, attrs ...*nl.RtAttr) []byte {
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = index
	b := msg.Serialize()
	for _, a := range attrs {
		b = append(b, a.Serialize()...)
	}
	return b
}

func TestParseLinkHeadKeepsNameAliasMasterKindMTU(t *testing.T) {
	info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
	info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated("veth"))
	info.AddRtAttr(nl.IFLA_INFO_DATA, []byte{1, 2, 3, 4})
	m := linkMessage(7,
		nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("pn1234abcd")),
		nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(1500)),
		nl.NewRtAttr(unix.IFLA_IFALIAS, nl.ZeroTerminated("podnet:uid/net1")),
		nl.NewRtAttr(unix.IFLA_MASTER, nl.Uint32Attr(3)),
		info,
	)
	got, err := parseLinkHead(m)
	if err != nil {
		t.Fatal(err)
	}
	want := linkHead{index: 7, name: "pn1234abcd", alias: "podnet:uid/net1", master: 3, kind: "veth", mtu: 1500}
	if got != want {
		t.Fatalf("parsed %+v, want %+v", got, want)
	}
	// The parsed link owns its strings: reusing the receive buffer, as
	// the next read does, does not change it.
	clear(m)
	if got != want {
		t.Fatalf("after the buffer is reused: %+v, want %+v", got, want)
	}
}

func TestParseLinkHeadRefusesBrokenMessages(t *testing.T) {
	if _, err := parseLinkHead([]byte{0, 0, 0}); err == nil {
		t.Error("a message shorter than its header gave no error")
	}
	m := linkMessage(1, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("eth0")))
	// The attribute claims more bytes than the message holds.
	native.PutUint16(m[unix.SizeofIfInfomsg:], 200)
	if _, err := parseLinkHead(m); !errors.Is(err, unix.EINVAL) {
		t.Errorf("an attribute longer than the message: error %v, want EINVAL", err)
	}
}

// TestPodLinksReadWholeOnlyWhatMayBePodnets: a plan parses whole only the
// pod links that may be podnet's; the head it decides by is read from the
// kernel's message: name, alias, MTU, kind and a host device's origin
// among the alternative names.
func TestPodLinksReadWholeOnlyWhatMayBePodnets(t *testing.T) {
	kind := func(k string) *nl.RtAttr {
		info := nl.NewRtAttr(unix.IFLA_LINKINFO, nil)
		info.AddRtAttr(nl.IFLA_INFO_KIND, nl.NonZeroTerminated(k))
		return info
	}
	alts := func(names ...string) *nl.RtAttr {
		props := nl.NewRtAttr(unix.IFLA_PROP_LIST|unix.NLA_F_NESTED, nil)
		for _, n := range names {
			props.AddRtAttr(unix.IFLA_ALT_IFNAME, nl.ZeroTerminated(n))
		}
		return props
	}
	origin := originAltName(DeviceOrigin{Name: "ens1f0", MTU: 9000, Up: true})
	for _, c := range []struct {
		name  string
		attrs []*nl.RtAttr
		head  linkHead
		whole bool
	}{
		{"the primary veth", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("eth0")), nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(1450)), kind("veth")},
			linkHead{index: 5, name: "eth0", kind: "veth", mtu: 1450}, false},
		{"loopback", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("lo")), nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(65536))},
			linkHead{index: 5, name: "lo", mtu: 65536}, false},
		{"an unaliased veth podnet may have stopped building", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("net1")), kind("veth")},
			linkHead{index: 5, name: "net1", kind: "veth"}, true},
		{"an app's aliased veth", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("net9")), nl.NewRtAttr(unix.IFLA_IFALIAS, nl.ZeroTerminated("mine")), kind("veth")},
			linkHead{index: 5, name: "net9", alias: "mine", kind: "veth"}, false},
		{"podnet's macvlan", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("net2")), nl.NewRtAttr(unix.IFLA_IFALIAS, nl.ZeroTerminated(podAlias("net2"))), kind("macvlan")},
			linkHead{index: 5, name: "net2", alias: podAlias("net2"), kind: "macvlan"}, true},
		{"a link in its wire check", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("net3")), nl.NewRtAttr(unix.IFLA_IFALIAS, nl.ZeroTerminated(checkingAlias("net3"))), kind("ipvlan")},
			linkHead{index: 5, name: "net3", alias: checkingAlias("net3"), kind: "ipvlan"}, true},
		{"a host device", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("data0")), alts("other", origin)},
			linkHead{index: 5, name: "data0", hostDevice: true}, true},
		{"a device with other alternative names", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("data1")), alts("other")},
			linkHead{index: 5, name: "data1"}, false},
		{"a VRF", []*nl.RtAttr{nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("red")), kind("vrf")},
			linkHead{index: 5, name: "red", kind: "vrf"}, true},
	} {
		got, err := parseLinkHead(linkMessage(5, c.attrs...))
		if err != nil || got != c.head {
			t.Errorf("%s: parsed %+v, %v; want %+v", c.name, got, err, c.head)
		}
		if got.mayBePodnets() != c.whole {
			t.Errorf("%s: read whole %v, want %v", c.name, !c.whole, c.whole)
		}
	}
}
