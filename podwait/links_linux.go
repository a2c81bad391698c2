package podwait

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"podnet.io/podnet/api/wait"
)

// The links are read with one raw RTM_GETLINK dump on a NETLINK_ROUTE
// socket rather than through a netlink library: the wait command runs in
// every podnet pod, and the standard library's syscall package keeps its
// binary, its image and the pages it maps small.

// recvBufferSize holds the largest dump message the kernel sends (it
// sizes a dump's messages to fit the largest link, up to 32 KiB); a
// message filling the whole buffer is taken as truncated.
const recvBufferSize = 64 << 10

// maxDumpAttempts bounds the retries of a dump the kernel marks
// interrupted: links changing without pause for that long is a fault.
const maxDumpAttempts = 10

// errDumpInterrupted is the kernel's NLM_F_DUMP_INTR: the links changed
// while the dump ran, so it may have missed or repeated one.
var errDumpInterrupted = errors.New("link dump interrupted by a concurrent change")

// listLinks returns the links of the calling thread's network namespace by
// name, retrying a dump the kernel marks interrupted. buf receives the
// replies (recvBufferSize bytes): the caller keeps one for every poll, so
// waiting makes little garbage and the heap stays at its minimum.
func listLinks(buf []byte) (map[string]Link, error) {
	var err error
	for range maxDumpAttempts {
		var msgs [][]byte
		if msgs, err = dumpLinks(buf); err != nil {
			return nil, err
		}
		var links map[string]Link
		if links, err = parseLinks(msgs); !errors.Is(err, errDumpInterrupted) {
			return links, err
		}
	}
	return nil, fmt.Errorf("list links: %w %d times", err, maxDumpAttempts)
}

// dumpLinks sends one RTM_GETLINK dump request and returns the datagrams
// of the answer, up to and including the one holding NLMSG_DONE. The
// socket belongs to the network namespace of the calling thread.
func dumpLinks(buf []byte) ([][]byte, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("list links: netlink socket: %w", err)
	}
	defer syscall.Close(fd)
	// Port 0 lets the kernel pick the socket's port on bind, and names the
	// kernel as the request's destination.
	kernel := &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}
	if err := syscall.Bind(fd, kernel); err != nil {
		return nil, fmt.Errorf("list links: bind netlink socket: %w", err)
	}
	const seq = 1
	if err := syscall.Sendto(fd, linkDumpRequest(seq), 0, kernel); err != nil {
		return nil, fmt.Errorf("list links: send RTM_GETLINK: %w", err)
	}
	var out [][]byte
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list links: receive: %w", err)
		}
		if n >= len(buf) {
			return nil, fmt.Errorf("list links: a reply of %d bytes or more does not fit the receive buffer", n)
		}
		out = append(out, append([]byte(nil), buf[:n]...))
		if done, err := lastDatagram(buf[:n], seq); err != nil || done {
			return out, err
		}
	}
}

// linkDumpRequest is an RTM_GETLINK request for every link of any family.
func linkDumpRequest(seq uint32) []byte {
	b := make([]byte, syscall.NLMSG_HDRLEN+syscall.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(b)))
	binary.NativeEndian.PutUint16(b[4:6], syscall.RTM_GETLINK)
	binary.NativeEndian.PutUint16(b[6:8], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(b[8:12], seq)
	b[syscall.NLMSG_HDRLEN] = syscall.AF_UNSPEC
	return b
}

// lastDatagram reports whether a datagram of the answer to seq ends the
// dump; messages of other requests are not expected on a fresh socket and
// are an error.
func lastDatagram(d []byte, seq uint32) (bool, error) {
	msgs, err := syscall.ParseNetlinkMessage(d)
	if err != nil {
		return false, fmt.Errorf("list links: %w", err)
	}
	for _, m := range msgs {
		if m.Header.Seq != seq {
			return false, fmt.Errorf("list links: reply to request %d, want %d", m.Header.Seq, seq)
		}
		if m.Header.Type == syscall.NLMSG_DONE || m.Header.Type == syscall.NLMSG_ERROR {
			return true, nil
		}
	}
	return false, nil
}

// parseLinks reads the name and up flag of every link in the datagrams of
// an RTM_GETLINK dump. It returns errDumpInterrupted when a message
// carries NLM_F_DUMP_INTR, the kernel's error when the dump ends with one,
// and a plain error for bytes that are not such a dump.
func parseLinks(datagrams [][]byte) (map[string]Link, error) {
	links := map[string]Link{}
	interrupted := false
	for _, d := range datagrams {
		msgs, err := syscall.ParseNetlinkMessage(d)
		if err != nil {
			return nil, fmt.Errorf("list links: malformed netlink message: %w", err)
		}
		for _, m := range msgs {
			interrupted = interrupted || m.Header.Flags&unix.NLM_F_DUMP_INTR != 0
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				if interrupted {
					return nil, errDumpInterrupted
				}
				return links, nil
			case syscall.NLMSG_ERROR:
				return nil, dumpError(m.Data)
			case syscall.RTM_NEWLINK:
				l, err := parseLink(m.Data)
				if err != nil {
					return nil, err
				}
				links[l.Name] = l
			}
		}
	}
	return nil, errors.New("list links: the dump ended without NLMSG_DONE")
}

// parseLink reads one RTM_NEWLINK message's body: an ifinfomsg, then
// attributes, one of which is IFLA_IFNAME.
func parseLink(b []byte) (Link, error) {
	if len(b) < syscall.SizeofIfInfomsg {
		return Link{}, fmt.Errorf("list links: RTM_NEWLINK of %d bytes, shorter than its %d-byte header", len(b), syscall.SizeofIfInfomsg)
	}
	// ifi_flags sits after family, pad, type and index (1+1+2+4 bytes).
	flags := binary.NativeEndian.Uint32(b[8:12])
	index := int32(binary.NativeEndian.Uint32(b[4:8]))
	name, alias, err := linkNames(b[syscall.SizeofIfInfomsg:])
	if err != nil {
		return Link{}, fmt.Errorf("list links: attributes of link %d: %w", index, err)
	}
	if name == "" {
		return Link{}, fmt.Errorf("list links: link %d has no name", index)
	}
	return Link{Name: name, Up: flags&syscall.IFF_UP != 0, Checking: strings.HasSuffix(alias, wait.CheckingAliasSuffix)}, nil
}

// linkNames finds IFLA_IFNAME and IFLA_IFALIAS among a link's attributes.
// It walks them itself: syscall.ParseNetlinkRouteAttr panics on a last
// attribute whose padding runs past the message.
func linkNames(b []byte) (name, alias string, err error) {
	for len(b) >= syscall.SizeofRtAttr {
		n := int(binary.NativeEndian.Uint16(b[0:2]))
		typ := binary.NativeEndian.Uint16(b[2:4])
		if n < syscall.SizeofRtAttr || n > len(b) {
			return "", "", fmt.Errorf("attribute of length %d with %d bytes left", n, len(b))
		}
		switch typ {
		case syscall.IFLA_IFNAME:
			name = cString(b[syscall.SizeofRtAttr:n])
		case unix.IFLA_IFALIAS:
			alias = cString(b[syscall.SizeofRtAttr:n])
		}
		b = b[min((n+syscall.RTA_ALIGNTO-1)&^(syscall.RTA_ALIGNTO-1), len(b)):]
	}
	return name, alias, nil
}

// dumpError is the kernel's answer in an NLMSG_ERROR message: a negative
// errno followed by the request that failed.
func dumpError(b []byte) error {
	if len(b) < 4 {
		return errors.New("list links: NLMSG_ERROR without an error code")
	}
	errno := -int32(binary.NativeEndian.Uint32(b[0:4]))
	if errno == 0 {
		// An acknowledgement, which a dump does not ask for.
		return errors.New("list links: the dump ended with an acknowledgement instead of NLMSG_DONE")
	}
	return fmt.Errorf("list links: %w", syscall.Errno(errno))
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
