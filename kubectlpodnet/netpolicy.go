package kubectlpodnet

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/attachment"
	"podnet.io/podnet/pkg/netpolicy"
)

// PolicyObjects are what `kubectl podnet policy` judges by: the same
// objects podnet-controller reads (pods with their approvals and
// network-status, namespaces' labels, MultiNetworkPolicies, profiles'
// floors), judged by the same rule (netpolicy.EvaluateNetwork).
type PolicyObjects struct {
	Pods       []corev1.Pod
	Namespaces map[string]map[string]string
	Policies   []mnp.MultiNetworkPolicy
	Profiles   []v1alpha1.NetworkProfile
}

// PolicyQuery asks whether traffic passes between a pod and a peer on one
// network: into the pod (Ingress) or out of it.
type PolicyQuery struct {
	Namespace, Pod, Network string
	Ingress                 bool
	// Peer is a pod (name in Namespace, or namespace/name) or an address.
	Peer     string
	Protocol corev1.Protocol // "" for ICMP and other protocols without ports
	Port     int32
}

// PolicyHop is one side's verdict: a direction of one pod's interface
// for one peer address.
type PolicyHop struct {
	Pod       string `json:"pod"`
	Interface string `json:"interface"`
	Direction string `json:"direction"`
	Peer      string `json:"peer"`
	Allowed   bool   `json:"allowed"`
	// AllowedBy are the policies (namespace/name, or policyFloor) whose
	// rules let it through; empty when the direction is not isolated.
	AllowedBy []string `json:"allowedBy,omitempty"`
	// IsolatedBy are the policies and floor that isolate the direction.
	IsolatedBy []string `json:"isolatedBy,omitempty"`
}

// PolicyAnswer is whether the traffic passes: every hop must allow it
// (the pod's direction and, for a pod peer, the peer's opposite one).
type PolicyAnswer struct {
	Network  string      `json:"network"`
	Traffic  string      `json:"traffic"`
	Allowed  bool        `json:"allowed"`
	Hops     []PolicyHop `json:"hops"`
	Problems []string    `json:"problems,omitempty"`
}

// member is a pod on the network: its evaluation input and its interface
// there.
type member struct {
	netpolicy.Member
	iface string
}

// networkMembers are the pods on network, read as the controller reads
// them (package attachment): the approved interfaces of that network,
// their address space, and their addresses in the agent's network-status.
func networkMembers(objs PolicyObjects, network string) []member {
	floors := map[string]map[string]*netpolicy.Floor{}
	for _, p := range objs.Profiles {
		floors[p.Name], _ = netpolicy.ProfileFloors(&p) // a refused floor isolates everything, as the controller has it
	}
	var out []member
	for i := range objs.Pods {
		p := &objs.Pods[i]
		attached, ok := attachment.Read(p.Annotations[v1alpha1.ApprovedAnnotation], p.Annotations[v1alpha1.NetworkStatusAnnotation])
		if !ok {
			continue
		}
		on, ok := attachment.On(attached, network)
		if !ok {
			continue
		}
		out = append(out, member{iface: on.Interface, Member: netpolicy.Member{
			Pod:   netpolicy.Pod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, Addresses: on.Addresses},
			Floor: floors[on.Profile][network],
			Space: on.Space,
		}})
	}
	return out
}

// explainPolicy answers q from objs.
func explainPolicy(objs PolicyObjects, q PolicyQuery) (PolicyAnswer, error) {
	members := networkMembers(objs, q.Network)
	evaluated := make([]netpolicy.Member, len(members))
	for i, m := range members {
		evaluated[i] = m.Member
	}
	verdicts, problems := netpolicy.EvaluateNetwork(netpolicy.ForNetwork(objs.Policies, q.Network), objs.Namespaces, evaluated)
	find := func(key string) (member, bool) {
		i := slices.IndexFunc(members, func(m member) bool { return m.Pod.Key() == key })
		if i < 0 {
			return member{}, false
		}
		return members[i], true
	}
	target, ok := find(q.Namespace + "/" + q.Pod)
	if !ok {
		return PolicyAnswer{}, fmt.Errorf("pod %s/%s has no interface on network %q", q.Namespace, q.Pod, q.Network)
	}
	peerKey := q.Peer
	if !strings.Contains(peerKey, "/") {
		peerKey = q.Namespace + "/" + peerKey
	}
	peer, peerIsPod := find(peerKey)
	var peerAddrs []netip.Addr
	if peerIsPod {
		peerAddrs = peer.Pod.Addresses
	} else {
		a, err := netip.ParseAddr(q.Peer)
		if err != nil {
			return PolicyAnswer{}, fmt.Errorf("peer %q is neither a pod on network %q nor an address", q.Peer, q.Network)
		}
		peerAddrs = []netip.Addr{a.Unmap()}
	}
	ans := PolicyAnswer{Network: q.Network, Traffic: traffic(q.Protocol, q.Port), Allowed: true}
	for _, p := range problems {
		ans.Problems = append(ans.Problems, p.String())
	}
	hop := func(m member, ingress bool, peer netip.Addr) PolicyHop {
		d, dir := verdicts[m.Pod.Key()].Egress, "egress"
		if ingress {
			d, dir = verdicts[m.Pod.Key()].Ingress, "ingress"
		}
		h := PolicyHop{Pod: m.Pod.Key(), Interface: m.iface, Direction: dir, Peer: peer.String(),
			Allowed: netpolicy.Allows(d, peer, q.Protocol, q.Port), AllowedBy: netpolicy.AllowedBy(d, peer, q.Protocol, q.Port)}
		if d.Isolated && !h.Allowed {
			h.IsolatedBy = d.IsolatedBy
		}
		return h
	}
	for _, pa := range peerAddrs {
		ans.Hops = append(ans.Hops, hop(target, q.Ingress, pa))
		if !peerIsPod {
			continue
		}
		for _, ta := range target.Pod.Addresses {
			if ta.Is4() == pa.Is4() {
				ans.Hops = append(ans.Hops, hop(peer, !q.Ingress, ta))
			}
		}
	}
	if len(ans.Hops) == 0 {
		return ans, fmt.Errorf("peer %s has no address on network %q yet", q.Peer, q.Network)
	}
	for _, h := range ans.Hops {
		ans.Allowed = ans.Allowed && h.Allowed
	}
	return ans, nil
}

// traffic names a protocol and port as the query's --port takes it.
func traffic(proto corev1.Protocol, port int32) string {
	if proto == "" {
		return "icmp"
	}
	return strings.ToLower(string(proto)) + "/" + strconv.Itoa(int(port))
}

// parseTraffic reads --port: tcp/80, udp/53, sctp/38412 or icmp.
func parseTraffic(s string) (corev1.Protocol, int32, error) {
	if strings.EqualFold(s, "icmp") {
		return "", 0, nil
	}
	proto, port, ok := strings.Cut(s, "/")
	n, err := strconv.ParseUint(port, 10, 16)
	p := corev1.Protocol(strings.ToUpper(proto))
	if !ok || err != nil || n == 0 || (p != corev1.ProtocolTCP && p != corev1.ProtocolUDP && p != corev1.ProtocolSCTP) {
		return "", 0, fmt.Errorf("--port %q: want tcp/<port>, udp/<port>, sctp/<port> (1-65535) or icmp", s)
	}
	return p, int32(n), nil
}

func (o *options) policyCommand() *cobra.Command {
	var f trafficFlags
	cmd := &cobra.Command{
		Use:   "policy POD --network NETWORK (--from PEER | --to PEER) [--port tcp/80]",
		Short: "Whether network policy lets traffic between a pod and a peer pass on a podnet network, and which policy or floor decides (exit 0 allowed, 1 denied, 2 error)",
		Example: `  kubectl podnet policy -n tenant-a web --network data --from client --port tcp/80
  kubectl podnet policy -n tenant-a web --network data --to tenant-b/db --port udp/53
  kubectl podnet policy -n tenant-a web --network data --from 192.168.77.9 --port icmp`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return o.runPolicy(cmd.Context(), args[0], f) },
	}
	f.add(cmd)
	_ = cmd.MarkFlagRequired("network")
	return cmd
}

// trafficFlags are the flags that ask about traffic on a network:
// `policy` takes them, and `can-i` with --network.
type trafficFlags struct {
	network, from, to, port string
}

func (f *trafficFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.network, "network", "", "the podnet network")
	cmd.Flags().StringVar(&f.from, "from", "", "traffic into POD from this peer: a pod (name, or namespace/name) or an address")
	cmd.Flags().StringVar(&f.to, "to", "", "traffic out of POD to this peer: a pod (name, or namespace/name) or an address")
	cmd.Flags().StringVar(&f.port, "port", "tcp/80", "protocol and port: tcp/<port>, udp/<port>, sctp/<port> or icmp")
}

// runPolicy answers whether the traffic f names passes to or from pod,
// and exits as can-i does: 0 allowed, 1 denied, 2 error.
func (o *options) runPolicy(ctx context.Context, pod string, f trafficFlags) error {
	if (f.from == "") == (f.to == "") {
		return &exitError{code: exitFailed, err: fmt.Errorf("give exactly one of --from and --to")}
	}
	q := PolicyQuery{Pod: pod, Network: f.network, Ingress: f.from != "", Peer: f.from + f.to}
	var err error
	if q.Protocol, q.Port, err = parseTraffic(f.port); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	c, ns, err := o.connect()
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	q.Namespace = ns
	objs, err := gatherPolicyObjects(ctx, c)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	ans, err := explainPolicy(objs, q)
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if err := o.print(ans, func(w io.Writer) error { return writePolicy(w, ans) }); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	if !ans.Allowed {
		return &exitError{code: exitDenied}
	}
	return nil
}

// gatherPolicyObjects lists what the verdict depends on, cluster-wide
// (a policy's namespaceSelector reaches every namespace).
func gatherPolicyObjects(ctx context.Context, c client.Client) (PolicyObjects, error) {
	var objs PolicyObjects
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		return objs, fmt.Errorf("list pods: %w", err)
	}
	objs.Pods = pods.Items
	var namespaces corev1.NamespaceList
	if err := c.List(ctx, &namespaces); err != nil {
		return objs, fmt.Errorf("list namespaces: %w", err)
	}
	objs.Namespaces = map[string]map[string]string{}
	for _, ns := range namespaces.Items {
		objs.Namespaces[ns.Name] = ns.Labels
	}
	var policies mnp.MultiNetworkPolicyList
	if err := c.List(ctx, &policies); err != nil && !meta.IsNoMatchError(err) {
		return objs, fmt.Errorf("list multinetworkpolicies: %w", err)
	}
	objs.Policies = policies.Items
	var profiles v1alpha1.NetworkProfileList
	if err := c.List(ctx, &profiles); err != nil {
		return objs, fmt.Errorf("list networkprofiles: %w", err)
	}
	objs.Profiles = profiles.Items
	return objs, nil
}

// writePolicy prints the answer, one line per hop.
func writePolicy(w io.Writer, a PolicyAnswer) error {
	verdict := "denied"
	if a.Allowed {
		verdict = "allowed"
	}
	fmt.Fprintf(w, "%s on network %s: %s\n", a.Traffic, a.Network, verdict)
	for _, h := range a.Hops {
		why := "not isolated"
		switch {
		case len(h.AllowedBy) > 0:
			why = "allowed by " + strings.Join(h.AllowedBy, ", ")
		case !h.Allowed:
			why = "denied: isolated by " + strings.Join(h.IsolatedBy, ", ") + ", and nothing allows it"
		}
		fmt.Fprintf(w, "  %s %s of %s, peer %s: %s\n", h.Interface, h.Direction, h.Pod, h.Peer, why)
	}
	for _, p := range a.Problems {
		fmt.Fprintf(w, "  problem: %s\n", p)
	}
	_, err := fmt.Fprint(w)
	return err
}
