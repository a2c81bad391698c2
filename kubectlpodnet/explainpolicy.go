package kubectlpodnet

import (
	"slices"
	"strings"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/netpolicy"
)

// PolicyLine says, for one of the pod's networks, which policies isolate
// each direction of its interface there: a direction no policy or floor
// isolates is open. Which peers and ports an isolated direction lets
// through is `kubectl podnet policy`'s answer.
type PolicyLine struct {
	Network   string   `json:"network"`
	Interface string   `json:"interface"`
	Ingress   []string `json:"ingressIsolatedBy,omitempty"`
	Egress    []string `json:"egressIsolatedBy,omitempty"`
}

// explainPolicies judges which policies isolate each of the pod's
// approved networks, by the rule the controller uses: a policy selects
// pods of its own namespace only, so the pod's namespace's policies and
// its profiles' floors are all it takes; who the pod's peers are does not
// change whether it is isolated.
func explainPolicies(a *ApprovalView, pod netpolicy.Pod, policies []mnp.MultiNetworkPolicy, profiles []v1alpha1.NetworkProfile) []PolicyLine {
	if a == nil {
		return nil
	}
	floors := map[string]map[string]*netpolicy.Floor{}
	for _, p := range profiles {
		floors[p.Name], _ = netpolicy.ProfileFloors(&p)
	}
	var out []PolicyLine
	for _, ifc := range a.Interfaces {
		if slices.ContainsFunc(out, func(l PolicyLine) bool { return l.Network == ifc.Network }) {
			continue
		}
		// A policy selects its own namespace's pods only (Evaluate).
		verdicts, _ := netpolicy.EvaluateNetwork(netpolicy.ForNetwork(policies, ifc.Network), nil, []netpolicy.Member{{Pod: pod, Floor: floors[ifc.Profile][ifc.Network]}})
		v := verdicts[pod.Key()]
		out = append(out, PolicyLine{Network: ifc.Network, Interface: ifc.Interface, Ingress: isolatedBy(v.Ingress), Egress: isolatedBy(v.Egress)})
	}
	return out
}

func isolatedBy(d netpolicy.Direction) []string {
	if !d.Isolated {
		return nil
	}
	return d.IsolatedBy
}

// policyText is one direction as explain prints it.
func policyText(isolatedBy []string) string {
	if len(isolatedBy) == 0 {
		return "open"
	}
	return "isolated by " + strings.Join(isolatedBy, ", ")
}
