package hostdev

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Selector selects node NICs. A NIC matches when it matches every list
// that is not empty, and a list when it matches one of its entries.
type Selector struct {
	// Names are shell patterns (path.Match) of node link names.
	Names []string
	// Drivers are kernel driver names, as ethtool reports them.
	Drivers []string
	// PCIAddresses are bus addresses, e.g. 0000:3b:00.1, as ethtool
	// reports them.
	PCIAddresses []string
	// VFs, when set, selects the SR-IOV virtual functions of the NICs
	// the lists match (their physical functions), and only those.
	VFs bool
}

// NIC is what a selector is matched against.
type NIC struct {
	Name, Driver, PCI string
	// PF is the physical function of an SR-IOV virtual function, and VF
	// its index there; nil for any other NIC.
	PF *NIC
	VF int
}

// Matches reports whether the selector selects the NIC: with VFs, a VF
// whose PF the lists match; otherwise a NIC the lists match (a VF too,
// by its own name, driver and address).
func (s Selector) Matches(n NIC) bool {
	if s.VFs {
		return n.PF != nil && s.matchesOwn(*n.PF)
	}
	return s.matchesOwn(n)
}

func (s Selector) matchesOwn(n NIC) bool {
	if len(s.Names) > 0 && !slices.ContainsFunc(s.Names, func(p string) bool {
		ok, _ := path.Match(p, n.Name)
		return ok
	}) {
		return false
	}
	if len(s.Drivers) > 0 && !slices.Contains(s.Drivers, n.Driver) {
		return false
	}
	return len(s.PCIAddresses) == 0 || slices.Contains(s.PCIAddresses, n.PCI)
}

// Validate checks a selector: at least one list, patterns that compile.
// field names the selector in errors.
func (s Selector) Validate(field string) []error {
	if len(s.Names)+len(s.Drivers)+len(s.PCIAddresses) == 0 {
		return []error{fmt.Errorf("%s: select by at least one of names, drivers and PCI addresses", field)}
	}
	var errs []error
	for _, p := range s.Names {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			errs = append(errs, fmt.Errorf("%s.names: %q is not a shell pattern", field, p))
		}
	}
	return errs
}

// String says the selector in words, for errors and conditions.
func (s Selector) String() string {
	var parts []string
	if len(s.Names) > 0 {
		parts = append(parts, "names "+strings.Join(s.Names, ","))
	}
	if len(s.Drivers) > 0 {
		parts = append(parts, "drivers "+strings.Join(s.Drivers, ","))
	}
	if len(s.PCIAddresses) > 0 {
		parts = append(parts, "pci "+strings.Join(s.PCIAddresses, ","))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	if s.VFs {
		return "VFs of " + strings.Join(parts, " and ")
	}
	return strings.Join(parts, " and ")
}

// ErrNoSelector is Validate's word for a missing selector.
var ErrNoSelector = errors.New("a host device interface must select node NICs")
