package nodecarry

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/pkg/hostdev"
)

// isCarryKey says whether a label key is one of the carry labels.
func isCarryKey(k string) bool {
	return strings.HasPrefix(k, carry.LabelPrefix+"/")
}

// planLabels returns the label changes that make the node's carry labels
// exactly satisfied (value carry.LabelValue; a nil value removes the
// label), or nil when they already are. Labels outside the carry prefix
// are never in it.
func planLabels(current map[string]string, satisfied []carry.Need) map[string]any {
	want := map[string]bool{}
	for _, n := range satisfied {
		want[n.Key()] = true
	}
	out := map[string]any{}
	for k := range want {
		if current[k] != carry.LabelValue {
			out[k] = carry.LabelValue
		}
	}
	for k := range current {
		if isCarryKey(k) && !want[k] {
			out[k] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// labelPatch is the merge patch of planLabels' changes.
func labelPatch(changes map[string]any) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": changes}})
	if err != nil {
		return nil, fmt.Errorf("carry labels patch: %w", err)
	}
	return b, nil
}

// applyLabels is current after the changes.
func applyLabels(current map[string]string, changes map[string]any) map[string]string {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range changes {
		if s, ok := v.(string); ok {
			out[k] = s
		} else {
			delete(out, k)
		}
	}
	return out
}

// TrimOwnNode is the transform of the cache of the agent's own Node: its
// labels (for nodeSelectors and the carry labels) and its InternalIPs
// (the VXLAN underlay) are all it reads.
func TrimOwnNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{
		TypeMeta:   n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels},
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			out.Status.Addresses = append(out.Status.Addresses, a)
		}
	}
	return out, nil
}

// internalIPs are the Node's InternalIPs in its order.
func internalIPs(n *corev1.Node) []netip.Addr {
	var out []netip.Addr
	for _, a := range n.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			out = append(out, ip)
		}
	}
	return out
}

// summary is what the reconciler's answers depend on: the satisfied
// needs, the node's labels and its free NICs (a pod waiting for one, and
// the devices of hostDevice networks offered through DRA). The link set
// itself changes with every pod; only a change of this is worth looking
// at the pods again.
func summary(satisfied []carry.Need, labels map[string]string, nics []hostdev.NIC) string {
	keys := make([]string, 0, len(satisfied))
	for _, n := range satisfied {
		keys = append(keys, n.Key())
	}
	var b strings.Builder
	b.WriteString(strings.Join(keys, ","))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString("|" + k + "=" + labels[k])
	}
	for _, n := range nics {
		b.WriteString("|nic=" + n.Name + "," + n.Driver + "," + n.PCI)
	}
	return b.String()
}
