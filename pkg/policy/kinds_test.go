package policy

import (
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

// TestEveryKindHasAnAddressSpace: an interface of every kind the API
// offers can hold addresses, so each must name the address space its
// claims and quota are keyed by; a kind without one would be approved and
// then fail at the agent.
func TestEveryKindHasAnAddressSpace(t *testing.T) {
	for _, k := range NetworkKinds() {
		ai := v1alpha1.ApprovedInterface{Kind: k, Network: "n", Bridge: "pnbr-n", Master: "eth1"}
		if rules.SpaceName(ai) == "" {
			t.Errorf("kind %q has no address space (rules.SpaceName)", k)
		}
	}
}
