package ifsettings

import (
	"fmt"
	"slices"
	"strings"
)

// Setting is one per-interface setting.
type Setting struct {
	// Name is what tenants ask for and profiles list.
	Name string
	// Sysctl is the setting's file under /proc/sys/net, %s standing for
	// the interface's name; "" for a link attribute set over netlink.
	Sysctl string
	// IPv6: the setting lives under ipv6/ and needs IPv6 on in the pod.
	IPv6 bool
	// Min and Max are the values the kernel takes (or a sane bound where
	// it takes any integer).
	Min, Max int64
	// Default is a new link's value in a new network namespace: what an
	// interface has when nobody asks, so asking for it is always allowed,
	// and what a setting a profile no longer offers goes back to.
	Default int64
}

// TxQueueLen is the one link attribute of the table.
const TxQueueLen = "txqueuelen"

// The table, by name. accept_ra is here for networks that take router
// advertisements (acceptRouterAdvertisements); elsewhere podnet itself
// keeps it at 0, and the profile's API refuses to offer it.
var table = []Setting{
	{Name: "arp_announce", Sysctl: "ipv4/conf/%s/arp_announce", Min: 0, Max: 2},
	{Name: "arp_ignore", Sysctl: "ipv4/conf/%s/arp_ignore", Min: 0, Max: 8},
	{Name: "arp_notify", Sysctl: "ipv4/conf/%s/arp_notify", Min: 0, Max: 1},
	{Name: "rp_filter", Sysctl: "ipv4/conf/%s/rp_filter", Min: 0, Max: 2},
	{Name: "accept_ra", Sysctl: "ipv6/conf/%s/accept_ra", IPv6: true, Min: 0, Max: 2, Default: 1},
	{Name: "accept_dad", Sysctl: "ipv6/conf/%s/accept_dad", IPv6: true, Min: 0, Max: 2, Default: 1},
	{Name: "dad_transmits", Sysctl: "ipv6/conf/%s/dad_transmits", IPv6: true, Min: 0, Max: 10, Default: 1},
	{Name: "addr_gen_mode", Sysctl: "ipv6/conf/%s/addr_gen_mode", IPv6: true, Min: 0, Max: 3},
	{Name: "disable_ipv6", Sysctl: "ipv6/conf/%s/disable_ipv6", IPv6: true, Min: 0, Max: 1},
	{Name: TxQueueLen, Min: 0, Max: 1 << 20, Default: 1000},
}

// Lookup finds a setting by its name.
func Lookup(name string) (Setting, bool) {
	i := slices.IndexFunc(table, func(s Setting) bool { return s.Name == name })
	if i < 0 {
		return Setting{}, false
	}
	return table[i], true
}

// Names are the settings' names, sorted: what an error lists.
func Names() []string {
	out := make([]string, len(table))
	for i, s := range table {
		out[i] = s.Name
	}
	slices.Sort(out)
	return out
}

// Path is the setting's sysctl file for the interface, relative to
// /proc/sys/net.
func (s Setting) Path(ifname string) string {
	return fmt.Sprintf(s.Sysctl, ifname)
}

// Check says whether v is a value the kernel takes for the setting.
func (s Setting) Check(v int64) error {
	if v < s.Min || v > s.Max {
		return fmt.Errorf("%s %d is outside the kernel's %d–%d", s.Name, v, s.Min, s.Max)
	}
	return nil
}

// Unknown is the error for a name not in the table.
func Unknown(name string) error {
	return fmt.Errorf("%q is not a setting podnet knows; known: %s", name, strings.Join(Names(), ", "))
}
