package v1alpha1

import (
	"fmt"
	"net"
	"strings"
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
type ApprovedMACRange struct {
	// Start and End bound the range (inclusive), lower case.
	Start string `json:"start"`
	End   string `json:"end"`
	// MaxPerNamespace is the quota of MACs of the network one namespace
	// may hold; 0 = no cap.
	MaxPerNamespace int32 `json:"maxPerNamespace,omitempty"`
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
