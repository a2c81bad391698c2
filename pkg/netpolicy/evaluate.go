package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Policy is one MultiNetworkPolicy written for the network.
type Policy struct {
	Namespace, Name string
	Spec            mnp.MultiNetworkPolicySpec
}

// Pod is a pod on the network, with its addresses there.
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	Addresses       []netip.Addr
}

// Key names a pod as namespace/name.
func (p Pod) Key() string { return p.Namespace + "/" + p.Name }

// Input is everything the verdicts of one network depend on.
type Input struct {
	Policies []Policy
	Pods     []Pod
	// Namespaces are the labels of every namespace, by name.
	Namespaces map[string]map[string]string
	// Floor, when set, is the admin's isolation of the network.
	Floor *Floor
}

// Floor isolates every pod on a network in each direction it sets,
// before and under any tenant policy.
type Floor struct {
	Ingress, Egress *Scope
}

// Scope is whom a pod may talk with in one direction, whatever the
// tenants' policies say: the pods of its own namespace, those of the
// namespaces that share its namespace's value of a label, and addresses.
type Scope struct {
	SameNamespace bool
	SameLabel     string
	CIDRs         []netip.Prefix
}

// Port is one port, or a range up to EndPort, of one protocol; Port 0
// means every port of the protocol.
type Port struct {
	Protocol      corev1.Protocol
	Port, EndPort int32
}

// Rule allows traffic from (ingress) or to (egress) its peers on its
// ports: every peer when Any, every port and protocol when Ports is nil.
type Rule struct {
	Any   bool
	Peers Prefixes
	Ports []Port
	// Policy is where the rule comes from: a policy's namespace/name, or
	// FloorName for the floor's own; what explains a verdict.
	Policy string
}

// FloorName stands for the network's policy floor where a rule or an
// isolation is explained.
const FloorName = "policyFloor"

// Direction is what a pod is allowed in one direction: everything when
// not Isolated, else only what one of Rules allows.
type Direction struct {
	Isolated bool
	Rules    []Rule
	// IsolatedBy are the policies (namespace/name, or FloorName) that
	// isolate the direction, for explaining a denial.
	IsolatedBy []string
}

// Verdict is what a pod is allowed on the network.
type Verdict struct {
	Ingress, Egress Direction
}

// Problem is a part of a policy podnet cannot honour; that part allows
// nothing.
type Problem struct {
	Policy string // namespace/name
	Field  string
	Reason string
}

func (p Problem) String() string { return p.Policy + ": " + p.Field + ": " + p.Reason }

// Evaluate gives every pod of the input its verdict, by namespace/name.
func Evaluate(in Input) (map[string]Verdict, []Problem) {
	e := evaluator{in: in}
	policies := slices.Clone(in.Policies)
	slices.SortFunc(policies, func(a, b Policy) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	out := make(map[string]Verdict, len(in.Pods))
	for _, pod := range in.Pods {
		out[pod.Key()] = Verdict{}
	}
	for _, p := range policies {
		e.apply(p, out)
	}
	if in.Floor != nil {
		for _, pod := range in.Pods {
			v := out[pod.Key()]
			v.Ingress = e.floor(v.Ingress, in.Floor.Ingress, pod)
			v.Egress = e.floor(v.Egress, in.Floor.Egress, pod)
			out[pod.Key()] = v
		}
	}
	return out, e.problems
}

type evaluator struct {
	in       Input
	problems []Problem
	// scopes are the floor's peers by scope and namespace: every pod of a
	// namespace has the same.
	scopes map[scopeKey]Prefixes
}

type scopeKey struct {
	scope     *Scope
	namespace string
}

func (e *evaluator) problem(p Policy, field, format string, args ...any) {
	e.problems = append(e.problems, Problem{Policy: p.Namespace + "/" + p.Name, Field: field, Reason: fmt.Sprintf(format, args...)})
}

// apply adds one policy's isolation and allows to the pods it selects.
func (e *evaluator) apply(p Policy, out map[string]Verdict) {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.PodSelector)
	if err != nil {
		e.problem(p, "spec.podSelector", "%v; the policy selects no pod", err)
		return
	}
	ingress, egress := policyTypes(p.Spec)
	var in, eg []Rule
	if ingress {
		for i, r := range p.Spec.Ingress {
			in = append(in, e.rule(p, fmt.Sprintf("spec.ingress[%d]", i), "from", r.From, r.Ports)...)
		}
	}
	if egress {
		for i, r := range p.Spec.Egress {
			eg = append(eg, e.rule(p, fmt.Sprintf("spec.egress[%d]", i), "to", r.To, r.Ports)...)
		}
	}
	for _, pod := range e.in.Pods {
		if pod.Namespace != p.Namespace || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		v := out[pod.Key()]
		if ingress {
			v.Ingress.Isolated = true
			v.Ingress.Rules = append(v.Ingress.Rules, in...)
			v.Ingress.IsolatedBy = append(v.Ingress.IsolatedBy, p.Namespace+"/"+p.Name)
		}
		if egress {
			v.Egress.Isolated = true
			v.Egress.Rules = append(v.Egress.Rules, eg...)
			v.Egress.IsolatedBy = append(v.Egress.IsolatedBy, p.Namespace+"/"+p.Name)
		}
		out[pod.Key()] = v
	}
}

// policyTypes are the directions a policy isolates: those it lists, or
// else Ingress, and Egress when it has egress rules (NetworkPolicy's
// default).
func policyTypes(s mnp.MultiNetworkPolicySpec) (ingress, egress bool) {
	if len(s.PolicyTypes) == 0 {
		return true, len(s.Egress) > 0
	}
	return slices.Contains(s.PolicyTypes, mnp.PolicyTypeIngress), slices.Contains(s.PolicyTypes, mnp.PolicyTypeEgress)
}

// rule turns one ingress or egress rule into a Rule: no peers means
// every peer; no ports every port. A rule whose ports are all refused
// allows nothing.
func (e *evaluator) rule(p Policy, field, peersField string, peers []mnp.MultiNetworkPolicyPeer, ports []mnp.MultiNetworkPolicyPort) []Rule {
	r := Rule{Any: len(peers) == 0, Policy: p.Namespace + "/" + p.Name}
	for i, peer := range peers {
		r.Peers = append(r.Peers, e.peer(p, fmt.Sprintf("%s.%s[%d]", field, peersField, i), peer)...)
	}
	r.Peers = normalize(r.Peers)
	for i, port := range ports {
		if pt, ok := e.port(p, fmt.Sprintf("%s.ports[%d]", field, i), port); ok {
			r.Ports = append(r.Ports, pt)
		}
	}
	if len(ports) > 0 && len(r.Ports) == 0 {
		return nil
	}
	if !r.Any && len(r.Peers) == 0 {
		return nil
	}
	return []Rule{r}
}

// peer is the addresses one peer stands for.
func (e *evaluator) peer(p Policy, field string, peer mnp.MultiNetworkPolicyPeer) []netip.Prefix {
	if b := peer.IPBlock; b != nil {
		if peer.PodSelector != nil || peer.NamespaceSelector != nil {
			e.problem(p, field, "ipBlock cannot be combined with podSelector or namespaceSelector; the peer allows nothing")
			return nil
		}
		cidr, err := netip.ParsePrefix(b.CIDR)
		if err != nil {
			e.problem(p, field+".ipBlock.cidr", "%q is not a CIDR; the peer allows nothing", b.CIDR)
			return nil
		}
		var excepts []netip.Prefix
		for i, x := range b.Except {
			ex, err := netip.ParsePrefix(x)
			if err != nil || !overlaps(cidr.Masked(), ex) || ex.Bits() < cidr.Bits() {
				e.problem(p, fmt.Sprintf("%s.ipBlock.except[%d]", field, i), "%q is not a CIDR inside %s; the peer allows nothing", x, b.CIDR)
				return nil
			}
			excepts = append(excepts, ex)
		}
		return except(cidr, excepts)
	}
	if peer.PodSelector == nil && peer.NamespaceSelector == nil {
		e.problem(p, field, "a peer sets podSelector, namespaceSelector or ipBlock; the peer allows nothing")
		return nil
	}
	podSel, nsSel := labels.Everything(), labels.Nothing()
	var err error
	if peer.PodSelector != nil {
		if podSel, err = metav1.LabelSelectorAsSelector(peer.PodSelector); err != nil {
			e.problem(p, field+".podSelector", "%v; the peer allows nothing", err)
			return nil
		}
	}
	if peer.NamespaceSelector != nil {
		if nsSel, err = metav1.LabelSelectorAsSelector(peer.NamespaceSelector); err != nil {
			e.problem(p, field+".namespaceSelector", "%v; the peer allows nothing", err)
			return nil
		}
	}
	var out []netip.Prefix
	for _, pod := range e.in.Pods {
		inNS := pod.Namespace == p.Namespace
		if peer.NamespaceSelector != nil {
			inNS = nsSel.Matches(labels.Set(e.in.Namespaces[pod.Namespace]))
		}
		if inNS && podSel.Matches(labels.Set(pod.Labels)) {
			for _, a := range pod.Addresses {
				out = append(out, hostPrefix(a))
			}
		}
	}
	return out
}

// port reads one port entry: TCP by default; a named port is refused, as
// podnet does not read the pods' container ports.
func (e *evaluator) port(p Policy, field string, port mnp.MultiNetworkPolicyPort) (Port, bool) {
	out := Port{Protocol: corev1.ProtocolTCP}
	if port.Protocol != nil {
		out.Protocol = *port.Protocol
	}
	switch out.Protocol {
	case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
	default:
		e.problem(p, field+".protocol", "%q is not TCP, UDP or SCTP; the port allows nothing", out.Protocol)
		return Port{}, false
	}
	if port.Port != nil {
		if port.Port.Type == intstr.String {
			e.problem(p, field+".port", "named port %q is not supported: podnet matches port numbers only; the port allows nothing", port.Port.StrVal)
			return Port{}, false
		}
		out.Port = port.Port.IntVal
		if out.Port < 1 || out.Port > 65535 {
			e.problem(p, field+".port", "%d is not within 1-65535; the port allows nothing", out.Port)
			return Port{}, false
		}
	}
	if port.EndPort != nil {
		if out.Port == 0 || *port.EndPort < out.Port || *port.EndPort > 65535 {
			e.problem(p, field+".endPort", "%d needs a numeric port at or below it, within 1-65535; the port allows nothing", *port.EndPort)
			return Port{}, false
		}
		out.EndPort = *port.EndPort
	}
	return out, true
}

// floor narrows a pod's direction to the floor's scope: every rule is cut
// to the scope's peers, and a direction no policy isolated allows the
// scope, on every port.
func (e *evaluator) floor(d Direction, s *Scope, pod Pod) Direction {
	if s == nil {
		return d
	}
	scope := e.scopePeers(s, pod)
	by := append(slices.Clone(d.IsolatedBy), FloorName)
	if !d.Isolated {
		if len(scope) == 0 {
			return Direction{Isolated: true, IsolatedBy: by}
		}
		return Direction{Isolated: true, Rules: []Rule{{Peers: scope, Policy: FloorName}}, IsolatedBy: by}
	}
	out := Direction{Isolated: true, IsolatedBy: by}
	for _, r := range d.Rules {
		peers := scope
		if !r.Any {
			peers = intersect(r.Peers, scope)
		}
		if len(peers) > 0 {
			out.Rules = append(out.Rules, Rule{Peers: peers, Ports: r.Ports, Policy: r.Policy})
		}
	}
	return out
}

// scopePeers is the addresses a scope allows a pod: its CIDRs, and the
// addresses of the pods of the namespaces it names relative to the
// pod's.
func (e *evaluator) scopePeers(s *Scope, pod Pod) Prefixes {
	key := scopeKey{s, pod.Namespace}
	if peers, ok := e.scopes[key]; ok {
		return peers
	}
	if e.scopes == nil {
		e.scopes = map[scopeKey]Prefixes{}
	}
	e.scopes[key] = e.namespacePeers(s, pod)
	return e.scopes[key]
}

// namespacePeers is scopePeers worked out.
func (e *evaluator) namespacePeers(s *Scope, pod Pod) Prefixes {
	out := slices.Clone(s.CIDRs)
	own, hasLabel := e.in.Namespaces[pod.Namespace][s.SameLabel]
	for _, other := range e.in.Pods {
		same := s.SameNamespace && other.Namespace == pod.Namespace
		if s.SameLabel != "" && hasLabel {
			v, ok := e.in.Namespaces[other.Namespace][s.SameLabel]
			same = same || (ok && v == own)
		}
		if same {
			for _, a := range other.Addresses {
				out = append(out, hostPrefix(a))
			}
		}
	}
	return normalize(out)
}

// Allows says whether a direction lets traffic with peer on one protocol
// and port through: the rule the enforcement must agree with, and what
// explains a verdict.
func Allows(d Direction, peer netip.Addr, proto corev1.Protocol, port int32) bool {
	return len(AllowedBy(d, peer, proto, port)) > 0 || !d.Isolated
}

// AllowedBy are the policies (namespace/name, or FloorName) whose rules
// let the traffic through an isolated direction, each once; none when
// the direction denies it (its IsolatedBy say who isolates it) or is not
// isolated.
func AllowedBy(d Direction, peer netip.Addr, proto corev1.Protocol, port int32) []string {
	if !d.Isolated {
		return nil
	}
	peer = peer.Unmap()
	var by []string
	for _, r := range d.Rules {
		if !r.Any && !slices.ContainsFunc(r.Peers, func(p netip.Prefix) bool { return p.Contains(peer) }) {
			continue
		}
		if (r.Ports == nil || slices.ContainsFunc(r.Ports, func(p Port) bool { return p.allows(proto, port) })) && !slices.Contains(by, r.Policy) {
			by = append(by, r.Policy)
		}
	}
	return by
}

func (p Port) allows(proto corev1.Protocol, port int32) bool {
	switch {
	case p.Protocol != proto:
		return false
	case p.Port == 0:
		return true
	case p.EndPort == 0:
		return port == p.Port
	}
	return port >= p.Port && port <= p.EndPort
}
