package policy

import (
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// MACSpan is a parsed MAC range, its ends as 48-bit numbers.
type MACSpan struct{ Start, End uint64 }

// maxMACQuota bounds a namespace's MAC quota, as the CRD does.
const maxMACQuota = 4096

// ParseMACSpan parses an inclusive range of unicast MACs, start ≤ end.
func ParseMACSpan(start, end string) (MACSpan, error) {
	s, err := macNumber(start)
	if err != nil {
		return MACSpan{}, fmt.Errorf("rangeStart %q: %w", start, err)
	}
	e, err := macNumber(end)
	if err != nil {
		return MACSpan{}, fmt.Errorf("rangeEnd %q: %w", end, err)
	}
	if s > e {
		return MACSpan{}, fmt.Errorf("rangeStart %s is above rangeEnd %s", start, end)
	}
	return MACSpan{Start: s, End: e}, nil
}

// ValidateMACRange checks a profile's macRange, naming the field that is
// wrong: the CRD's rules refuse the same, so a profile that bypassed them
// is refused here too.
func ValidateMACRange(p *field.Path, r *v1alpha1.MACRange) field.ErrorList {
	var errs field.ErrorList
	s, err := macNumber(r.RangeStart)
	if err != nil {
		errs = append(errs, field.Invalid(p.Child("rangeStart"), r.RangeStart, err.Error()))
	}
	e, err2 := macNumber(r.RangeEnd)
	if err2 != nil {
		errs = append(errs, field.Invalid(p.Child("rangeEnd"), r.RangeEnd, err2.Error()))
	}
	if err == nil && err2 == nil && s > e {
		errs = append(errs, field.Invalid(p.Child("rangeStart"), r.RangeStart, fmt.Sprintf("above rangeEnd %s", r.RangeEnd)))
	}
	if m := r.MaxPerNamespace; m != nil && (*m < 1 || *m > maxMACQuota) {
		errs = append(errs, field.Invalid(p.Child("maxPerNamespace"), *m, fmt.Sprintf("must be 1-%d", maxMACQuota)))
	}
	return errs
}

// macNumber parses a unicast Ethernet MAC into its 48-bit number.
func macNumber(s string) (uint64, error) {
	mac, err := net.ParseMAC(s)
	if err != nil || len(mac) != 6 {
		return 0, fmt.Errorf("not an Ethernet MAC address (aa:bb:cc:dd:ee:ff)")
	}
	if mac[0]&1 != 0 {
		return 0, fmt.Errorf("not a unicast MAC address (the first octet must be even)")
	}
	var n uint64
	for _, b := range mac {
		n = n<<8 | uint64(b)
	}
	return n, nil
}

// Size is how many MACs the span holds.
func (s MACSpan) Size() uint64 { return s.End - s.Start + 1 }

// At is the i-th MAC of the span (i < Size).
func (s MACSpan) At(i uint64) net.HardwareAddr {
	n := s.Start + i
	mac := make(net.HardwareAddr, 6)
	for k := 5; k >= 0; k-- {
		mac[k] = byte(n)
		n >>= 8
	}
	return mac
}

// Contains reports whether mac (any spelling net.ParseMAC reads) lies in
// the span.
func (s MACSpan) Contains(mac string) bool {
	n, err := macNumber(mac)
	return err == nil && n >= s.Start && n <= s.End
}

// String is the span as "start-end".
func (s MACSpan) String() string { return s.At(0).String() + "-" + s.At(s.Size()-1).String() }

// DefaultMACQuota is the quota of a range without maxPerNamespace: half
// its size, at least 1 and at most 4096.
func (s MACSpan) DefaultMACQuota() int32 {
	return int32(min(max(s.Size()/2, 1), maxMACQuota))
}
