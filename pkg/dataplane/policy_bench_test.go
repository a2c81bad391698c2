//go:build bench

package dataplane

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"podnet.io/podnet/pkg/netpolicy"
	benchfig "podnet.io/podnet/test/bench"
)

// policyNetwork is a network of 1,000 pods in 20 namespaces (two tenant
// labels), with policies policies: each namespace's select one app each
// and let in the pods of its tenant's namespaces on one TCP port.
func policyNetwork(policies int) netpolicy.Input {
	in := netpolicy.Input{Namespaces: map[string]map[string]string{}}
	for n := range 20 {
		ns := fmt.Sprintf("ns%d", n)
		in.Namespaces[ns] = map[string]string{"kubernetes.io/metadata.name": ns, "tenant": fmt.Sprint(n % 2)}
		for i := range 50 {
			k := n*50 + i
			in.Pods = append(in.Pods, netpolicy.Pod{Namespace: ns, Name: fmt.Sprintf("p%d", i),
				Labels:    map[string]string{"app": fmt.Sprintf("a%d", i%10)},
				Addresses: []netip.Addr{netip.AddrFrom4([4]byte{10, 200, byte(k / 250), byte(k%250 + 1)})}})
		}
	}
	tcp := corev1.ProtocolTCP
	for p := range policies {
		ns, app := fmt.Sprintf("ns%d", p%20), fmt.Sprintf("a%d", (p/20)%10)
		port := intstr.FromInt32(int32(8000 + p))
		in.Policies = append(in.Policies, netpolicy.Policy{Namespace: ns, Name: fmt.Sprintf("pol%d", p), Spec: mnp.MultiNetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Ingress: []mnp.MultiNetworkPolicyIngressRule{{
				From:  []mnp.MultiNetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tenant": in.Namespaces[ns]["tenant"]}}}},
				Ports: []mnp.MultiNetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}},
		}})
	}
	in.Floor = &netpolicy.Floor{Ingress: &netpolicy.Scope{SameLabel: "tenant"}}
	return in
}

// TestBenchAttachPolicies attaches a pod of one bridge network under a
// policy floor (ingress from its tenant's namespaces), with 0 and with
// 200 tenant policies on the network, alternating. Its filter comes from
// netpolicy.Evaluate and Compile over the whole network, as the
// controller and the agent make it; a policy on the network changes the
// attach only by the pod's own elements, so the ratio shows whether a pod
// start grows with the policies. Also prints Evaluate's time for the whole
// network (the controller's work for one change of it), and the attach
// of a pod without any policy beside them: what a floor costs a pod.
func TestBenchAttachPolicies(t *testing.T) {
	ctx := context.Background()
	d, _ := newNode(t)
	filters := map[int]Interface{}
	for _, n := range []int{0, 200} {
		in := policyNetwork(n)
		var evals []time.Duration
		var v map[string]netpolicy.Verdict
		for range benchfig.Size(5, 1) {
			start := time.Now()
			var problems []netpolicy.Problem
			v, problems = netpolicy.Evaluate(in)
			evals = append(evals, time.Since(start))
			if len(problems) > 0 {
				t.Fatal(problems)
			}
		}
		bench(fmt.Sprintf("policy_evaluate_1000_pods_%d_policies_p50", n), ms(benchfig.Percentile(evals, 0.5)), "ms")
		filters[n] = Interface{PolicyIn: netpolicy.Compile(v["ns0/p0"].Ingress)}
		bench(fmt.Sprintf("policy_elements_of_a_pod_%d_policies", n), float64(len(filters[n].PolicyIn.Allow)), "elements")
	}
	took := map[int][]time.Duration{}
	for i := range benchfig.Size(60, 5) {
		for _, n := range []int{-1, 0, 200} {
			_, p := newPod(t)
			p = benchPod(t, p, 1, 1, i)
			p.Interfaces[0].PolicyIn = filters[n].PolicyIn
			start := time.Now()
			if _, err := d.Apply(ctx, p); err != nil {
				t.Fatal(err)
			}
			took[n] = append(took[n], time.Since(start))
			if err := d.Detach(ctx, p.UID, p.NetNS); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, q := range []struct {
		name string
		at   float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		zero, many := ms(benchfig.Percentile(took[0], q.at)), ms(benchfig.Percentile(took[200], q.at))
		bench("attach_1_if_floor_0_policies_"+q.name, zero, "ms")
		bench("attach_1_if_floor_200_policies_"+q.name, many, "ms")
		bench("attach_200_over_0_policies_"+q.name, many/zero, "ratio")
		none := ms(benchfig.Percentile(took[-1], q.at))
		bench("attach_1_if_no_policy_"+q.name, none, "ms")
		bench("attach_floor_over_no_policy_"+q.name, zero/none, "ratio")
	}
}
