package v1alpha1

import (
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MACRange is the inclusive range of MAC addresses a network hands out
// (kubemacpool's rangeStart and rangeEnd). Every interface of the network
// gets a MAC of the range, unique across the cluster (MACClaim); a static
// MAC a tenant asks for must lie in it. Use unicast, locally administered
// addresses (the first octet's second-lowest bit set: 02:…, 0a:…).
// +kubebuilder:validation:XValidation:rule="self.rangeStart.lowerAscii() <= self.rangeEnd.lowerAscii()",message="macRange.rangeStart must not be above macRange.rangeEnd"
type MACRange struct {
	// RangeStart is the first MAC of the range, aa:bb:cc:dd:ee:ff.
	// +required
	// +kubebuilder:validation:MaxLength=17
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$')",message="rangeStart must be a MAC address written aa:bb:cc:dd:ee:ff"
	// +kubebuilder:validation:XValidation:rule="self.matches('^.[02468aceACE]')",message="rangeStart must be a unicast MAC address: the first octet must be even"
	RangeStart string `json:"rangeStart"`

	// RangeEnd is the last MAC of the range, aa:bb:cc:dd:ee:ff.
	// +required
	// +kubebuilder:validation:MaxLength=17
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$')",message="rangeEnd must be a MAC address written aa:bb:cc:dd:ee:ff"
	// +kubebuilder:validation:XValidation:rule="self.matches('^.[02468aceACE]')",message="rangeEnd must be a unicast MAC address: the first octet must be even"
	RangeEnd string `json:"rangeEnd"`

	// MaxPerNamespace is how many MACs of this network one namespace's
	// pods may hold at once. Absent: half the range's size, at least 1 and
	// at most 4096.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4096
	MaxPerNamespace *int32 `json:"maxPerNamespace,omitempty"`
}

// ApprovedMACRange is the resolved macRange of an approved interface: the
// agent claims the interface's MAC from it.
//
// +kubebuilder:object:generate=false
type ApprovedMACRange struct {
	// Start and End bound the range (inclusive), lower case.
	Start string `json:"start"`
	End   string `json:"end"`
	// MaxPerNamespace is the quota of MACs of the network one namespace
	// may hold; 0 = no cap.
	MaxPerNamespace int32 `json:"maxPerNamespace,omitempty"`
}

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
func ValidateMACRange(p *field.Path, r *MACRange) field.ErrorList {
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

// MACClaimName is the name of the MACClaim that reserves mac: its octets,
// lower case, joined by dashes.
func MACClaimName(mac net.HardwareAddr) string {
	return strings.ReplaceAll(mac.String(), ":", "-")
}

// MACSlotName is the name of the k-th MAC quota slot of a namespace in a
// network. Its dots keep it apart from every MACClaimName.
func MACSlotName(network, namespace string, k int32) string {
	return fmt.Sprintf("slot.%s.%s.%d", network, namespace, k)
}
