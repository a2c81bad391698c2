package podwait

import (
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/api/wait"
)

// nlmsg is one netlink message: header, body, padding to 4 bytes.
func nlmsg(typ, flags uint16, seq uint32, body []byte) []byte {
	n := syscall.NLMSG_HDRLEN + len(body)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint32(b[0:4], uint32(n))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	binary.NativeEndian.PutUint16(b[6:8], flags)
	binary.NativeEndian.PutUint32(b[8:12], seq)
	copy(b[syscall.NLMSG_HDRLEN:], body)
	return b
}

// newLink is an RTM_NEWLINK body: ifinfomsg with index and flags, then
// IFLA_IFNAME (NUL-terminated, as the kernel sends it) and an unrelated
// IFLA_MTU the parser must skip.
func newLink(index int32, flags uint32, name string) []byte {
	b := make([]byte, syscall.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[4:8], uint32(index))
	binary.NativeEndian.PutUint32(b[8:12], flags)
	mtu := make([]byte, 4)
	binary.NativeEndian.PutUint32(mtu, 1500)
	b = append(b, rtattr(syscall.IFLA_MTU, mtu)...)
	if name != "" {
		b = append(b, rtattr(syscall.IFLA_IFNAME, append([]byte(name), 0))...)
	}
	return b
}

func rtattr(typ uint16, v []byte) []byte {
	n := syscall.SizeofRtAttr + len(v)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:2], uint16(n))
	binary.NativeEndian.PutUint16(b[2:4], typ)
	copy(b[syscall.SizeofRtAttr:], v)
	return b
}

func errMsg(errno syscall.Errno) []byte {
	b := make([]byte, 4+syscall.NLMSG_HDRLEN)
	binary.NativeEndian.PutUint32(b[0:4], uint32(-int32(errno)))
	return b
}

func concat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const multi = syscall.NLM_F_MULTI

func TestParseLinks(t *testing.T) {
	links, err := parseLinks([][]byte{
		concat(nlmsg(syscall.RTM_NEWLINK, multi, 1, newLink(1, syscall.IFF_UP|syscall.IFF_LOOPBACK, "lo")),
			nlmsg(syscall.RTM_NEWLINK, multi, 1, newLink(7, syscall.IFF_BROADCAST, "net1"))),
		nlmsg(syscall.RTM_NEWLINK, multi, 1, newLink(9, syscall.IFF_UP, "net2")),
		// Up, with the alias of a link whose addresses are being checked.
		nlmsg(syscall.RTM_NEWLINK, multi, 1, append(newLink(11, syscall.IFF_UP, "net3"),
			rtattr(unix.IFLA_IFALIAS, append([]byte("podnet:net3"+wait.CheckingAliasSuffix), 0))...)),
		nlmsg(syscall.NLMSG_DONE, multi, 1, make([]byte, 4)),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Link{"lo": {Name: "lo", Up: true}, "net1": {Name: "net1"}, "net2": {Name: "net2", Up: true},
		"net3": {Name: "net3", Up: true, Checking: true}}
	if len(links) != len(want) {
		t.Fatalf("links = %v, want %v", links, want)
	}
	for name, l := range want {
		if links[name] != l {
			t.Errorf("links[%q] = %+v, want %+v", name, links[name], l)
		}
	}
}

func TestParseLinksErrors(t *testing.T) {
	done := nlmsg(syscall.NLMSG_DONE, multi, 1, make([]byte, 4))
	link := nlmsg(syscall.RTM_NEWLINK, multi, 1, newLink(3, 0, "net1"))
	truncated := link[:len(link)-8]
	for _, c := range []struct {
		name string
		dump [][]byte
		want string
	}{
		{"interrupted", [][]byte{nlmsg(syscall.RTM_NEWLINK, multi|unix.NLM_F_DUMP_INTR, 1, newLink(3, 0, "net1")), done}, errDumpInterrupted.Error()},
		{"kernel error", [][]byte{nlmsg(syscall.NLMSG_ERROR, 0, 1, errMsg(syscall.EPERM))}, "operation not permitted"},
		{"acknowledgement", [][]byte{nlmsg(syscall.NLMSG_ERROR, 0, 1, errMsg(0))}, "acknowledgement"},
		{"no done", [][]byte{link}, "without NLMSG_DONE"},
		{"truncated message", [][]byte{truncated, done}, "malformed netlink message"},
		{"short ifinfomsg", [][]byte{nlmsg(syscall.RTM_NEWLINK, multi, 1, make([]byte, 8)), done}, "shorter than its 16-byte header"},
		{"no name", [][]byte{nlmsg(syscall.RTM_NEWLINK, multi, 1, newLink(4, 0, "")), done}, "link 4 has no name"},
		{"bad attribute", [][]byte{nlmsg(syscall.RTM_NEWLINK, multi, 1, concat(newLink(5, 0, ""), []byte{0xff, 0, 3, 0}, rtattr(syscall.IFLA_IFNAME, []byte("x\x00")))), done}, "attributes of link 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseLinks(c.dump)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
			if c.name == "interrupted" && !errors.Is(err, errDumpInterrupted) {
				t.Fatalf("err = %v, want errDumpInterrupted so the dump is retried", err)
			}
		})
	}
}

// FuzzParseLinks: whatever bytes a dump holds, parsing returns links or an
// error, never panics, and every link it returns has a name.
func FuzzParseLinks(f *testing.F) {
	f.Add(concat(nlmsg(syscall.RTM_NEWLINK, multi, 1, newLink(1, 1, "lo")), nlmsg(syscall.NLMSG_DONE, multi, 1, make([]byte, 4))))
	f.Add(nlmsg(syscall.NLMSG_ERROR, 0, 1, errMsg(syscall.EPERM)))
	f.Add(nlmsg(syscall.RTM_NEWLINK, multi, 1, make([]byte, 3)))
	f.Fuzz(func(t *testing.T, b []byte) {
		links, err := parseLinks([][]byte{b})
		if err != nil {
			return
		}
		for k, l := range links {
			if k == "" || k != l.Name {
				t.Fatalf("link %q keyed %q", l.Name, k)
			}
		}
	})
}

func TestLinkDumpRequest(t *testing.T) {
	msgs, err := syscall.ParseNetlinkMessage(linkDumpRequest(7))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("request parses as %v, %v", msgs, err)
	}
	h := msgs[0].Header
	if h.Type != syscall.RTM_GETLINK || h.Flags != syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP || h.Seq != 7 || len(msgs[0].Data) != syscall.SizeofIfInfomsg {
		t.Fatalf("request header %+v, body %d bytes", h, len(msgs[0].Data))
	}
}
