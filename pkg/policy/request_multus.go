package policy

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// multusOnlyKeys are the keys of Multus' JSON selection element
// (NetworkSelectionElement) that podnet refuses, each with the reason a
// tenant reads in the denial. Multus accepts them and hands them to CNI
// plugins; podnet has no plugin to hand them to, and silently dropping a
// wish would leave a workload believing it got what it asked for.
// docs/multus.md carries the same table.
var multusOnlyKeys = map[string]string{
	"cni-args":         "podnet never passes raw configuration to a plugin: everything an interface gets is approved field by field against a NetworkProfile",
	"infiniband-guid":  "podnet attaches Ethernet interfaces only (bridge, macvlan, ipvlan, vlan)",
	"deviceID":         "a pod never names a device: the agent picks a free NIC of a hostDevice network on the pod's node",
	"portMappings":     "podnet does not program port mappings: it never touches the host's iptables or nftables",
	"bandwidth":        "podnet does not shape traffic",
	"interfaceRequest": "this key was renamed in Multus 3.2: write \"interface\"",
}

// jsonElement is what one element of the JSON list decodes into: podnet's
// fields plus Multus' keys, kept raw so that their presence can be refused
// by name instead of as an unknown field.
type jsonElement struct {
	NetworkRequest
	CNIArgs          json.RawMessage `json:"cni-args"`
	InfinibandGUID   json.RawMessage `json:"infiniband-guid"`
	DeviceID         json.RawMessage `json:"deviceID"`
	PortMappings     json.RawMessage `json:"portMappings"`
	Bandwidth        json.RawMessage `json:"bandwidth"`
	InterfaceRequest json.RawMessage `json:"interfaceRequest"`
}

// refuseMultusKeys returns one error per Multus-only key the element sets.
// A JSON null counts as absent: Multus itself writes "cni-args":null when it
// marshals an element without CNI arguments.
func refuseMultusKeys(p *field.Path, e *jsonElement) field.ErrorList {
	set := map[string]json.RawMessage{
		"cni-args":         e.CNIArgs,
		"infiniband-guid":  e.InfinibandGUID,
		"deviceID":         e.DeviceID,
		"portMappings":     e.PortMappings,
		"bandwidth":        e.Bandwidth,
		"interfaceRequest": e.InterfaceRequest,
	}
	keys := make([]string, 0, len(set))
	for k, raw := range set {
		if len(raw) > 0 && string(raw) != "null" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		errs = append(errs, field.Forbidden(p.Child(k), fmt.Sprintf("network %q: the Multus key %q is not supported: %s", e.Name, k, multusOnlyKeys[k])))
	}
	return errs
}
