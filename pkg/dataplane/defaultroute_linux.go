package dataplane

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// defaultRouteProtocol marks the default routes podnet puts through a
// secondary interface (rtm_protocol). It differs from routeProtocol so that
// the planner, which owns the routes it marks, never sees them.
const defaultRouteProtocol netlink.RouteProtocol = 0x71

// demotedMetric is added to the metric of a default route podnet moves out
// of the way. The demoted route stays in the table, unused while podnet's
// route exists, so the pod's original default route survives an agent crash
// and comes back, with its own metric, when podnet's route goes.
const demotedMetric = 1 << 24

// ensureDefaultRoutes makes, per address family, the first interface of p
// that names a default gateway of that family (and did not fail) carry the
// pod's default route, demoting the others; a family no interface asks for
// gets its original default routes back.
func (s *session) ensureDefaultRoutes(p Pod, failed map[string]bool) error {
	var errs []error
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		link, gw, err := s.defaultGateway(p, failed, family)
		if err == nil {
			if link == nil {
				err = s.restoreDefaultRoutes(family)
			} else {
				err = s.takeDefaultRoute(family, link, gw)
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("default route (%s): %w", familyName(family), err))
		}
	}
	return errors.Join(errs...)
}

// defaultGateway finds the interface and gateway that should carry the
// family's default route; a nil link means none.
func (s *session) defaultGateway(p Pod, failed map[string]bool, family int) (netlink.Link, net.IP, error) {
	for _, ifc := range p.Interfaces {
		if failed[ifc.Name] {
			continue
		}
		for _, gw := range ifc.DefaultGateways {
			if (gw.To4() != nil) != (family == netlink.FAMILY_V4) {
				continue
			}
			l, err := linkByName(s.pod, ifc.Name)
			if err != nil {
				return nil, nil, fmt.Errorf("interface %q: %w", ifc.Name, err)
			}
			return l, gw, nil
		}
	}
	return nil, nil, nil
}

// takeDefaultRoute demotes every other default route of the family and
// puts podnet's through link via gw, with the metric the pod's own default
// route had (so the pod's view is "the same route, another way out").
func (s *session) takeDefaultRoute(family int, link netlink.Link, gw net.IP) error {
	routes, err := s.defaultRoutes(family)
	if err != nil {
		return err
	}
	metric, found := 0, false
	for _, r := range routes {
		switch {
		case r.Protocol == defaultRouteProtocol:
			if r.LinkIndex == link.Attrs().Index && r.Gw.Equal(gw) {
				continue
			}
			if err := ignore(s.pod.RouteDel(&r), unix.ESRCH); err != nil {
				return fmt.Errorf("delete stale default route via %s: %w", r.Gw, err)
			}
		case r.Priority >= demotedMetric:
			if !found || r.Priority-demotedMetric < metric {
				metric, found = r.Priority-demotedMetric, true
			}
		default:
			if !found || r.Priority < metric {
				metric, found = r.Priority, true
			}
			if err := s.moveRoute(r, r.Priority+demotedMetric); err != nil {
				return fmt.Errorf("demote default route via %s: %w", r.Gw, err)
			}
		}
	}
	want := &netlink.Route{LinkIndex: link.Attrs().Index, Gw: gw, Dst: defaultDst(family), Priority: metric, Protocol: defaultRouteProtocol}
	if err := s.pod.RouteReplace(want); err != nil {
		return fmt.Errorf("default route via %s dev %s: %w", gw, link.Attrs().Name, err)
	}
	return nil
}

// restoreDefaultRoutes removes podnet's default route of the family and
// puts the demoted ones back with their own metric. With nothing demoted
// and nothing of podnet's it changes nothing.
func (s *session) restoreDefaultRoutes(family int) error {
	routes, err := s.defaultRoutes(family)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range routes {
		if r.Protocol == defaultRouteProtocol {
			errs = append(errs, ignore(s.pod.RouteDel(&r), unix.ESRCH))
		}
	}
	for _, r := range routes {
		if r.Protocol != defaultRouteProtocol && r.Priority >= demotedMetric {
			errs = append(errs, s.moveRoute(r, r.Priority-demotedMetric))
		}
	}
	return errors.Join(errs...)
}

// moveRoute re-adds r with another metric, then deletes it: the metric is
// part of a route's key, so it cannot be changed in place, and adding first
// leaves no moment without a default route.
func (s *session) moveRoute(r netlink.Route, metric int) error {
	// A fresh route with the attributes that make it what it is: a listed
	// route carries more (cache info, flags) than an add accepts.
	moved := netlink.Route{
		LinkIndex: r.LinkIndex, Dst: defaultDst(r.Family), Gw: r.Gw, Src: r.Src,
		Priority: metric, Protocol: r.Protocol, Scope: r.Scope, Table: r.Table, MTU: r.MTU,
	}
	if err := ignore(s.pod.RouteAdd(&moved), unix.EEXIST); err != nil {
		return err
	}
	return ignore(s.pod.RouteDel(&r), unix.ESRCH)
}

// defaultRoutes are the main table's default routes of the family: those
// the session's last read back saw (once), else listed now.
func (s *session) defaultRoutes(family int) ([]netlink.Route, error) {
	if routes, ok := s.mainDefaults[family]; ok {
		delete(s.mainDefaults, family)
		return routes, nil
	}
	all, err := nldump.Retry(func() ([]netlink.Route, error) {
		return s.pod.RouteListFiltered(family, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	var out []netlink.Route
	for _, r := range all {
		if isDefault(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// isDefault says whether r is a default route (no destination, or one of
// length 0).
func isDefault(r netlink.Route) bool {
	return r.Dst == nil || r.Dst.IP.IsUnspecified() && isZeroMask(r.Dst.Mask)
}

func isZeroMask(m net.IPMask) bool {
	ones, _ := m.Size()
	return ones == 0
}

func defaultDst(family int) *net.IPNet {
	if family == netlink.FAMILY_V4 {
		return &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
	}
	return &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
}

func familyName(family int) string {
	if family == netlink.FAMILY_V4 {
		return "IPv4"
	}
	return "IPv6"
}
