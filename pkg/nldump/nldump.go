package nldump

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
)

// Attempts bounds the retries of one dump.
const Attempts = 8

// Retry runs dump until the kernel did not interrupt it, at most Attempts
// times.
func Retry[T any](dump func() (T, error)) (T, error) {
	var out T
	var err error
	for range Attempts {
		out, err = dump()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			return out, err
		}
	}
	return out, fmt.Errorf("netlink dump interrupted %d times: %w", Attempts, err)
}

// Links lists every link h sees.
func Links(h *netlink.Handle) ([]netlink.Link, error) {
	return Retry(h.LinkList)
}

// Addrs lists the addresses of family on link, or on every link when link is
// nil.
func Addrs(h *netlink.Handle, link netlink.Link, family int) ([]netlink.Addr, error) {
	return Retry(func() ([]netlink.Addr, error) { return h.AddrList(link, family) })
}

// Routes lists the routes of family that match filter on the fields named by
// mask.
func Routes(h *netlink.Handle, family int, filter *netlink.Route, mask uint64) ([]netlink.Route, error) {
	return Retry(func() ([]netlink.Route, error) { return h.RouteListFiltered(family, filter, mask) })
}

// Neighs lists the neighbour entries of family on the link with index.
func Neighs(h *netlink.Handle, index, family int) ([]netlink.Neigh, error) {
	return Retry(func() ([]netlink.Neigh, error) { return h.NeighList(index, family) })
}
