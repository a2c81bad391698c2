package v1alpha1

import (
	"fmt"
	"strings"
)

// HoldModes are the valid hold modes, in the order flags and messages list
// them.
var HoldModes = []HoldMode{HoldWaitInitContainer, HoldAttachAtSandboxSetup, HoldNRI}

// ParseHoldMode returns the hold setting named s: a mode of HoldModes or
// HoldAuto. The error names what was given and every allowed value; flag is
// the name the caller shows it under (a flag or a Helm value).
func ParseHoldMode(flag, s string) (HoldMode, error) {
	for _, m := range HoldSettings {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(HoldSettings))
	for i, m := range HoldSettings {
		names[i] = string(m)
	}
	return "", fmt.Errorf("%s %q: must be one of %s", flag, s, strings.Join(names, ", "))
}

// NRIRequiredPluginsValue is what the webhook writes under
// NRIRequiredPluginsAnnotation on every podnet pod in HoldNRI mode: a YAML
// list naming only podnet's plugin.
const NRIRequiredPluginsValue = `["` + NRIPluginName + `"]`

// HeldByNRI says whether a pod's annotations show that the webhook chose
// NRI to hold it: they name podnet's plugin in NRI's required-plugins
// annotation (which a ValidatingAdmissionPolicy keeps as the webhook
// wrote it).
func HeldByNRI(annotations map[string]string) bool {
	return annotations[NRIRequiredPluginsAnnotation] == NRIRequiredPluginsValue
}
