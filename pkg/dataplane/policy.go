package dataplane

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"podnet.io/podnet/pkg/portsecurity"
)

// isolated says whether the interface's policy isolates it in a
// direction: only then does the pod's policy table name it.
func (ifc Interface) isolated() bool {
	return ifc.PolicyIn.Isolated || ifc.PolicyOut.Isolated
}

// enforceable says whether the pod's policy table can hold the
// interface's policy. An interface in a VRF cannot: its traffic reaches
// the input and output hooks under the VRF device's name, not the
// link's (measured on the kernel VM's 6.1: an isolated link in a VRF
// still answered ICMP), so such an interface is failed and kept down
// rather than left open.
func (ifc Interface) enforceable() error {
	if ifc.isolated() && ifc.VRF != nil {
		return fmt.Errorf("interface %s is in VRF %s: network policy cannot be enforced on an interface in a VRF, so it is kept down", ifc.Name, ifc.VRF.Name)
	}
	return nil
}

// policyPort is the interface's policy as the pod's policy table takes
// it: keyed by the link's name in the pod, whatever its kind.
func (ifc Interface) policyPort() portsecurity.PolicyPort {
	return portsecurity.PolicyPort{Port: ifc.Name, In: ifc.PolicyIn, Out: ifc.PolicyOut}
}

// policyFingerprint identifies a policy: two policies with the same
// fingerprint write the same elements. It is never "".
func policyFingerprint(p portsecurity.PolicyPort) string {
	var b []byte
	for _, d := range []portsecurity.PolicyDirection{p.In, p.Out} {
		if !d.Isolated {
			b = append(b, 0)
			continue
		}
		b = binary.BigEndian.AppendUint32(append(b, 1), uint32(len(d.Allow)))
		for _, a := range d.Allow {
			addr := a.Peer.Addr().AsSlice()
			b = append(append(b, byte(len(addr))), addr...)
			b = append(b, byte(a.Peer.Bits()), a.Protocol, boolByte(a.AnyProtocol))
			b = binary.BigEndian.AppendUint16(b, a.PortLo)
			b = binary.BigEndian.AppendUint16(b, a.PortHi)
		}
	}
	sum := sha256.Sum256(b)
	return string(sum[:])
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}
