package policy

import (
	"fmt"
	"regexp"

	"podnet.io/podnet/api/v1alpha1"
)

// The checks below repeat the CRD's schema and CEL rules that the policy
// relies on. The API server enforces them on every write, but a profile
// stored before a rule existed never went through it; the policy refuses
// such a profile as an admin error instead of guessing what it meant.

// linkNameRE is the CRD's pattern for host link names.
var linkNameRE = regexp.MustCompile(`^[a-zA-Z0-9][-_.a-zA-Z0-9]*$`)

// maxMaxInterfaces is the CRD's maximum of NetworkProfileSpec.MaxInterfaces.
const maxMaxInterfaces = 32

// checkNetwork checks how a network's interfaces are made.
func checkNetwork(n *v1alpha1.Network) error {
	k, err := kindOf(n)
	if err != nil {
		return err
	}
	return k.check(n)
}

func checkLinkName(field, name string) error {
	if len(name) > maxInterfaceName || !linkNameRE.MatchString(name) {
		return fmt.Errorf("has %s %q that is not a link name", field, name)
	}
	return nil
}

// checkMode accepts the empty mode, which means the default.
func checkMode(field, mode string, allowed ...string) error {
	if mode == "" || contains(allowed, mode) {
		return nil
	}
	return fmt.Errorf("has %s %q, not one of %v", field, mode, allowed)
}
