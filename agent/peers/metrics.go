package peers

import (
	"encoding/json"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"podnet.io/podnet/api/v1alpha1"
)

// refusedPeers counts the nodes that carry a network of this node but are
// left out of its flood list and tunnel table for their underlay address.
var refusedPeers = prometheus.NewGauge(prometheus.GaugeOpts{
	Name: "podnet_agent_vxlan_refused_peers",
	Help: "Nodes carrying a VXLAN network of this node that are no peers because their underlay address is not allowed (loopback, link-local, outside underlay.cidrs, ...).",
})

func init() { metrics.Registry.MustRegister(refusedPeers) }

// jsonMergePatch sets (or, for nil, removes) the node's VNI annotation.
func jsonMergePatch(value any) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.NodeVNIsAnnotation: value}}})
	if err != nil {
		return nil, fmt.Errorf("vni annotation patch: %w", err)
	}
	return b, nil
}
