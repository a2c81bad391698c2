package podstate

import (
	"encoding/json"
	"fmt"
	"slices"

	"podnet.io/podnet/api/v1alpha1"
)

// Attached drops the default entry: what podnet attached.
func Attached(status []v1alpha1.NetworkStatus) []v1alpha1.NetworkStatus {
	return slices.DeleteFunc(slices.Clone(status), func(s v1alpha1.NetworkStatus) bool { return s.Default })
}

// EncodeStatus is the annotation value; an empty list is "[]", so a pod
// whose networks were all removed says so instead of looking untouched.
func EncodeStatus(s []v1alpha1.NetworkStatus) string {
	if s == nil {
		s = []v1alpha1.NetworkStatus{}
	}
	b, err := json.Marshal(s)
	if err != nil {
		// A slice of plain structs always encodes.
		panic(fmt.Sprintf("encode network status: %v", err))
	}
	return string(b)
}

// DecodeStatus reads the annotation the agent wrote before. Garbage (someone
// else wrote it) reads as nothing held: the addresses are then released when
// the pod goes, by the agent's detach or by podnet-controller's claim GC
// (IPClaims carry no owner reference: see pkg/ipam).
func DecodeStatus(v string) []v1alpha1.NetworkStatus {
	var s []v1alpha1.NetworkStatus
	if json.Unmarshal([]byte(v), &s) != nil {
		return nil
	}
	return s
}
