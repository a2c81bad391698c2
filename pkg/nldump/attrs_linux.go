package nldump

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// WalkAttrs calls f with the type and value of each route attribute in b,
// as nl.ParseRouteAttr reads them but without building a slice of them:
// a dump of a full node parses thousands, and a link subscription one per
// change of every link. The values are b's own bytes, valid while b is.
func WalkAttrs(b []byte, f func(typ uint16, value []byte)) error {
	for len(b) >= unix.SizeofRtAttr {
		n := int(binary.NativeEndian.Uint16(b[0:2]))
		if n < unix.SizeofRtAttr || n > len(b) {
			return fmt.Errorf("route attribute of length %d in %d bytes: %w", n, len(b), unix.EINVAL)
		}
		f(binary.NativeEndian.Uint16(b[2:4]), b[unix.SizeofRtAttr:n])
		b = b[min(nlaAlign(n), len(b)):]
	}
	return nil
}

// nlaAlign rounds an attribute length up to the netlink alignment.
func nlaAlign(n int) int { return (n + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1) }
