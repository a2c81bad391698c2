package ipam

import (
	"fmt"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// SpaceOf is the address space an approved interface's addresses are
// claimed in: rules.SpaceName, the one rule the webhook signed
// into ai.IPAM.AddressSpace. An approval signed before the space was
// signed has none and gets it derived here; a signed space that the rule
// does not give for this interface is refused, so the agent never claims
// addresses in a space other than the one of the link it attaches.
func SpaceOf(ai v1alpha1.ApprovedInterface) (string, error) {
	space := rules.SpaceName(ai)
	if space == "" {
		return "", fmt.Errorf("interface %q of network %q: kind %q has no address space", ai.Interface, ai.Network, ai.Kind)
	}
	if ai.IPAM != nil && ai.IPAM.AddressSpace != "" && ai.IPAM.AddressSpace != space {
		return "", fmt.Errorf("interface %q of network %q: approved address space %q is not %q, the space of its %s", ai.Interface, ai.Network, ai.IPAM.AddressSpace, space, ai.Kind)
	}
	return space, nil
}
