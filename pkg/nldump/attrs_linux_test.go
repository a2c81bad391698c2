package nldump

import (
	"errors"
	"slices"
	"testing"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// TestWalkAttrsReadsWhatParseRouteAttrReads checks WalkAttrs against the
// netlink library's parser on attributes of unaligned lengths, and that
// a length past the end is an error.
func TestWalkAttrsReadsWhatParseRouteAttrReads(t *testing.T) {
	var b []byte
	for _, a := range []*nl.RtAttr{
		nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("eth0")),
		nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(1500)),
		nl.NewRtAttr(unix.IFLA_IFALIAS, []byte("podnet:abc")),
	} {
		b = append(b, a.Serialize()...)
	}
	want, err := nl.ParseRouteAttr(b)
	if err != nil {
		t.Fatal(err)
	}
	var types []uint16
	var values [][]byte
	if err := WalkAttrs(b, func(typ uint16, v []byte) {
		types, values = append(types, typ), append(values, v)
	}); err != nil {
		t.Fatal(err)
	}
	if len(types) != len(want) {
		t.Fatalf("walked %d attributes, want %d", len(types), len(want))
	}
	for i, a := range want {
		if types[i] != a.Attr.Type || !slices.Equal(values[i], a.Value) {
			t.Errorf("attribute %d: type %d value %q, want %d %q", i, types[i], values[i], a.Attr.Type, a.Value)
		}
	}
	// The last attribute is 14 bytes padded to 16: cut into its value.
	cut := b[:len(b)-4]
	if err := WalkAttrs(cut, func(uint16, []byte) {}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("attribute cut short: error %v, want EINVAL", err)
	}
}
