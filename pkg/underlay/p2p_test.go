package underlay

import (
	"net/netip"
	"strings"
	"testing"
)

func addr(s string) []netip.Addr { return []netip.Addr{netip.MustParseAddr(s)} }

// TestReserve: a key (port and VNI) is one holder's; another pod's tunnel
// or a spanning bridge of the same key is refused, naming the key and the
// holder; an inherited lock is taken over only by a tunnel to one of its
// own peers.
func TestReserve(t *testing.T) {
	a := PointToPoint(4789, 5001, IPv4, addr("198.51.100.7"))
	b := PointToPoint(4789, 5001, IPv4, addr("198.51.100.8"))
	b6 := PointToPoint(4789, 5001, IPv6, addr("2001:db8::8"))
	otherPort := PointToPoint(4790, 5001, IPv4, addr("198.51.100.8"))
	k := Key{Port: 4789, VNI: 5001}
	for _, tc := range []struct {
		name    string
		held    map[Key]Holding
		holder  string
		tunnels []Tunnel
		want    []string // substrings of the error; none: reserved
	}{
		{name: "free", holder: `pod "a/a"`, tunnels: []Tunnel{a}},
		{name: "own key again", held: map[Key]Holding{k: {Holder: `pod "a/a"`}}, holder: `pod "a/a"`, tunnels: []Tunnel{a}},
		{name: "another pod's key", held: map[Key]Holding{k: {Holder: `pod "a/a"`}}, holder: `pod "b/b"`, tunnels: []Tunnel{b},
			want: []string{"vxlan port 4789 vni 5001", `held on this node by pod "a/a"`, `pod "b/b" cannot`}},
		{name: "another family, same port and vni", held: map[Key]Holding{k: {Holder: `pod "a/a"`}}, holder: `pod "b/b"`, tunnels: []Tunnel{b6},
			want: []string{`pod "a/a"`}},
		{name: "another port", held: map[Key]Holding{k: {Holder: `pod "a/a"`}}, holder: `pod "b/b"`, tunnels: []Tunnel{otherPort}},
		{name: "a spanning bridge's key", held: map[Key]Holding{k: {Holder: `spanning bridge "pnbr-x"`}}, holder: `pod "b/b"`, tunnels: []Tunnel{b},
			want: []string{`spanning bridge "pnbr-x"`}},
		{name: "twice in one pod", holder: `pod "b/b"`, tunnels: []Tunnel{a, b}, want: []string{"asked for twice"}},
		{name: "inherited, its own remote", held: map[Key]Holding{k: {Holder: "the table", Inherited: true, Peers: addr("198.51.100.7")}},
			holder: `pod "a/a"`, tunnels: []Tunnel{a}},
		{name: "inherited, another remote", held: map[Key]Holding{k: {Holder: "the table", Inherited: true, Peers: addr("198.51.100.7")}},
			holder: `pod "b/b"`, tunnels: []Tunnel{b}, want: []string{"held by the table"}},
		{name: "not vxlan", held: map[Key]Holding{k: {Holder: `pod "a/a"`}}, holder: `pod "b/b"`,
			tunnels: []Tunnel{{Name: "wg", Proto: UDP, Port: 4789, Family: IPv4, Peers: addr("198.51.100.8")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Reserve(tc.held, tc.holder, tc.tunnels)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("reserved")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestPointToPointLocks: one lock per key, the first pod's; a spanning
// network's key gets no pod lock; an inherited lock stays only while no
// pod holds its key; the plan drops the VNI's packets from anyone but
// the one remote and forwards none to it.
func TestPointToPointLocks(t *testing.T) {
	a := PointToPoint(4789, 5001, IPv4, addr("198.51.100.7"))
	b := PointToPoint(4789, 5001, IPv4, addr("198.51.100.8"))
	c := PointToPoint(4790, 5001, IPv4, addr("198.51.100.9"))
	d := PointToPoint(4789, 5002, IPv4, addr("198.51.100.10"))
	old := PointToPoint(4789, 5001, IPv4, []netip.Addr{netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("198.51.100.8")})
	oldOther := PointToPoint(4789, 5003, IPv4, addr("198.51.100.11"))
	span := VXLAN(4789, 5002, IPv4, addr("192.0.2.2"))
	for _, tc := range []struct {
		name      string
		spans     []Tunnel
		pods      [][]Tunnel
		inherited []Tunnel
		want      string // name=peers of each lock, by name
	}{
		{name: "one pod per key", pods: [][]Tunnel{{c}, {a}}, want: "tun-4789-5001=198.51.100.7 tun-4790-5001=198.51.100.9"},
		{name: "a second pod of one key is left out", pods: [][]Tunnel{{a}, {b}}, want: "tun-4789-5001=198.51.100.7"},
		{name: "a spanning key is left out", spans: []Tunnel{span}, pods: [][]Tunnel{{d, a}}, want: "tun-4789-5001=198.51.100.7"},
		{name: "inherited while unclaimed", inherited: []Tunnel{old, oldOther}, want: "tun-4789-5001=198.51.100.7,198.51.100.8 tun-4789-5003=198.51.100.11"},
		{name: "inherited gives way to its pod", pods: [][]Tunnel{{a}}, inherited: []Tunnel{old, oldOther}, want: "tun-4789-5001=198.51.100.7 tun-4789-5003=198.51.100.11"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PointToPointLocks(tc.spans, tc.pods, tc.inherited)
			var words []string
			for _, l := range got {
				words = append(words, l.Name+"="+fmtAddrs(l.Peers))
			}
			if s := strings.Join(words, " "); s != tc.want {
				t.Fatalf("locks %s, want %s", s, tc.want)
			}
			if _, err := Plan(append(tc.spans, got...)); err != nil {
				t.Fatal(err)
			}
		})
	}
	rs, err := Plan(PointToPointLocks(nil, [][]Tunnel{{a}, {b}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var input, forward int
	for _, s := range rs.Sets {
		if s.Name == "from-tun-4789-5001-v4" && (len(s.Addrs) != 1 || s.Addrs[0] != a.Peers[0]) {
			t.Fatalf("the lock admits %v, want only %v", s.Addrs, a.Peers)
		}
	}
	for _, r := range rs.Rules {
		switch {
		case r.Hook == Input && r.Port == 4789 && r.Segment != nil && r.Segment.Value == 5001:
			input++
		case r.Hook == Forward && r.Port == 4789 && r.Check == ToSet:
			forward++
		}
	}
	if input != 2 || forward != 1 {
		t.Fatalf("rules %+v", rs.Rules)
	}
	if _, err := Plan([]Tunnel{a, b}); err == nil {
		t.Fatal("two locks of one name planned")
	}
}

func fmtAddrs(as []netip.Addr) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}
