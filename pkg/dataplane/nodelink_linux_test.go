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

func TestParseNodeLinkKeepsNameAliasMasterKind(t *testing.T) {
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
	got, err := parseNodeLink(m)
	if err != nil {
		t.Fatal(err)
	}
	want := nodeLink{index: 7, name: "pn1234abcd", alias: "podnet:uid/net1", master: 3, kind: "veth"}
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

func TestParseNodeLinkRefusesBrokenMessages(t *testing.T) {
	if _, err := parseNodeLink([]byte{0, 0, 0}); err == nil {
		t.Error("a message shorter than its header gave no error")
	}
	m := linkMessage(1, nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("eth0")))
	// The attribute claims more bytes than the message holds.
	native.PutUint16(m[unix.SizeofIfInfomsg:], 200)
	if _, err := parseNodeLink(m); !errors.Is(err, unix.EINVAL) {
		t.Errorf("an attribute longer than the message: error %v, want EINVAL", err)
	}
}
