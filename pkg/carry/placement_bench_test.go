//go:build bench

package carry

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/bench"
)

// TestBenchPlacement times what the webhook adds to a pod CREATE for
// placement: a macvlan network's requirements (its NIC, its module and a
// nodeSelector of two labels) ANDed into a pod's two node selector
// terms, beside a node-local bridge network that needs nothing (the
// common pod, which placement leaves alone). Batches of 1,000, the median
// batch per pod.
func TestBenchPlacement(t *testing.T) {
	macvlan := &v1alpha1.Network{Name: "up", Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"},
		NodeSelector: &v1alpha1.NetworkNodeSelector{MatchLabels: map[string]string{"zone": "a", "rack": "r1"}}}
	bridge := &v1alpha1.Network{Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "br0"}}
	term := func(v string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}
	}
	pod := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{term("x"), term("y")}}}}
	path := field.NewPath("spec", "networks").Index(0)
	place := func(n *v1alpha1.Network) {
		reqs, err := Requirements(n, path)
		if err != nil {
			t.Fatal(err)
		}
		RequireOnPod(pod, reqs)
	}
	const batch = 1000
	batches := bench.Size(200, 5)
	perPod := func(n *v1alpha1.Network) time.Duration {
		var d []time.Duration
		for range batches {
			start := time.Now()
			for range batch {
				place(n)
			}
			d = append(d, time.Since(start)/batch)
		}
		return bench.Percentile(d, 0.5)
	}
	needs, nothing := perPod(macvlan), perPod(bridge)
	allocs := testing.AllocsPerRun(100, func() { place(macvlan) })
	fmt.Printf("BENCH placement_bench_loadavg_1m %s load\n", bench.LoadAverage())
	fmt.Printf("BENCH placement_macvlan_with_selector_per_pod %.2f us\n", float64(needs.Nanoseconds())/1000)
	fmt.Printf("BENCH placement_macvlan_with_selector_allocs %.0f allocs\n", allocs)
	fmt.Printf("BENCH placement_node_local_bridge_per_pod %.2f us\n", float64(nothing.Nanoseconds())/1000)
}
