package attachment

import (
	"net/netip"
	"reflect"
	"testing"
)

// TestOn: a pod's place on a network is its first interface there, with
// the addresses of all its interfaces there, sorted and once each; a
// network it is not on is no place.
func TestOn(t *testing.T) {
	approval := `{"interfaces":[{"interface":"net1","network":"data","profile":"p1","kind":"bridge","bridge":"br"},` +
		`{"interface":"net2","network":"up","profile":"p1","kind":"macvlan","master":"eth1"},` +
		`{"interface":"net3","network":"data","profile":"p2","kind":"bridge","bridge":"br"}]}`
	status := `[{"interface":"net1","ips":["10.0.0.9/24","fd00::9"]},{"interface":"net2","ips":["10.1.0.1"]},{"interface":"net3","ips":["10.0.0.3","10.0.0.9"]}]`
	attached, ok := Read(approval, status)
	if !ok || len(attached) != 3 {
		t.Fatalf("Read: %v %+v", ok, attached)
	}
	on, ok := On(attached, "data")
	want := Attachment{Interface: "net1", Network: "data", Profile: "p1", Space: "br.bridge",
		Addresses: []netip.Addr{netip.MustParseAddr("10.0.0.3"), netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("fd00::9")}}
	if !ok || !reflect.DeepEqual(on, want) {
		t.Errorf("On data: %v %+v, want %+v", ok, on, want)
	}
	if !reflect.DeepEqual(attached[0].Addresses, []netip.Addr{netip.MustParseAddr("10.0.0.9"), netip.MustParseAddr("fd00::9")}) {
		t.Errorf("On changed the attachment it read: %+v", attached[0])
	}
	if on, ok := On(attached, "up"); !ok || on.Space != "eth1.link" {
		t.Errorf("On up: %v %+v", ok, on)
	}
	if _, ok := On(attached, "other"); ok {
		t.Error("a pod is on a network it has no interface on")
	}
	if _, ok := Read("not json", ""); ok {
		t.Error("an unreadable approval was read")
	}
}
