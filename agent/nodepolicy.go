package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/netpolicy"
	"podnet.io/podnet/pkg/portsecurity"
)

// Network policy: podnet-controller writes the verdicts of every pod
// interface of a node (MultiNetworkPolicies under the profiles' floors)
// into the node's NodePolicy; the agent watches its own NodePolicy only
// (WatchNodePolicy), keeps it parsed, and gives each interface its
// policy when it plans the pod (interfacePolicy). A change of the
// NodePolicy requeues exactly the pods whose interfaces' policies
// changed. Where the API server serves no NodePolicy, interfaces get
// their floors only.
//
// +kubebuilder:rbac:groups=podnet.io,resources=nodepolicies,verbs=get;list;watch

// nodePolicies are the policies the node's NodePolicy lists, parsed, and
// by pod.
type nodePolicies struct {
	mu     sync.RWMutex
	listed map[netpolicy.InterfaceKey]portsecurity.PolicyPort
	byPod  map[string]map[string]portsecurity.PolicyPort
}

// of is what the NodePolicy lists for the pod's interfaces, by name.
func (n *nodePolicies) of(uid string) map[string]portsecurity.PolicyPort {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.byPod[uid]
}

// replace makes listed the node's policies and returns the pods whose
// interfaces' policies changed.
func (n *nodePolicies) replace(listed map[netpolicy.InterfaceKey]portsecurity.PolicyPort) map[string]bool {
	byPod := map[string]map[string]portsecurity.PolicyPort{}
	for k, p := range listed {
		if byPod[k.PodUID] == nil {
			byPod[k.PodUID] = map[string]portsecurity.PolicyPort{}
		}
		byPod[k.PodUID][k.Interface] = p
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	changed := policyChanges(n.listed, listed)
	n.listed, n.byPod = listed, byPod
	return changed
}

// policyChanges are the pods with an interface whose listed policy was
// added, changed or removed between was and is.
func policyChanges(was, is map[netpolicy.InterfaceKey]portsecurity.PolicyPort) map[string]bool {
	changed := map[string]bool{}
	for k, p := range is {
		if q, ok := was[k]; !ok || !samePolicy(p, q) {
			changed[k.PodUID] = true
		}
	}
	for k := range was {
		if _, ok := is[k]; !ok {
			changed[k.PodUID] = true
		}
	}
	return changed
}

func samePolicy(a, b portsecurity.PolicyPort) bool {
	same := func(x, y portsecurity.PolicyDirection) bool {
		return x.Isolated == y.Isolated && slices.Equal(x.Allow, y.Allow)
	}
	return a.Port == b.Port && same(a.In, b.In) && same(a.Out, b.Out)
}

// interfacePolicy is the one rule of an interface's policy, per
// direction: what the node's NodePolicy lists for it (listed); else, when
// its network's floor isolates that direction, nothing allowed (fail
// closed until podnet-controller's verdict arrives); else not isolated.
func interfacePolicy(listed portsecurity.PolicyPort, floor *v1alpha1.PolicyFloor) (in, out portsecurity.PolicyDirection) {
	direction := func(d portsecurity.PolicyDirection, floored bool) portsecurity.PolicyDirection {
		switch {
		case d.Isolated:
			return d
		case floored:
			return portsecurity.PolicyDirection{Isolated: true}
		}
		return portsecurity.PolicyDirection{}
	}
	return direction(listed.In, floor != nil && floor.Ingress != nil), direction(listed.Out, floor != nil && floor.Egress != nil)
}

// setPolicies gives each desired interface its policy: the NodePolicy's
// entries of the pod (listed, by interface name) under the floor of the
// network its approval names in its profile.
func setPolicies(p *dataplane.Pod, a *v1alpha1.Approval, profiles []v1alpha1.NetworkProfile, listed map[string]portsecurity.PolicyPort) {
	for i := range p.Interfaces {
		ifc := &p.Interfaces[i]
		var floor *v1alpha1.PolicyFloor
		for _, ai := range a.Interfaces {
			if ai.Interface != ifc.Name {
				continue
			}
			if n := profileNetwork(profiles, ai.Profile, ai.Network); n != nil {
				floor = n.PolicyFloor
			}
		}
		ifc.PolicyIn, ifc.PolicyOut = interfacePolicy(listed[ifc.Name], floor)
	}
}

// planPolicies fills in the desired interfaces' policies, from the
// profiles in the cache and the NodePolicy as last parsed.
func (r *Reconciler) planPolicies(ctx context.Context, at *attempt) *outcome {
	var profiles v1alpha1.NetworkProfileList
	if err := r.Client.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return &outcome{stage: stageUnjudged, err: fmt.Errorf("pod %s/%s: list networkprofiles: %w", at.pod.Namespace, at.pod.Name, err)}
	}
	setPolicies(&at.desired, at.approval, profiles.Items, r.policies.of(at.ref.UID))
	return nil
}

// WatchNodePolicy adds the node's NodePolicy, by name, to the cache
// options where the API server serves NodePolicies (one discovery
// request, made once at start), and says whether it does: the
// Reconciler's NodePolicy is to be set to the answer. Where it serves
// none (the CRD is not installed yet) a cache with it would not start;
// the agent then starts all the same, and pod interfaces get their
// networks' floors only.
func WatchNodePolicy(dc discovery.DiscoveryInterface, opts *cache.Options, nodeName string) (bool, error) {
	served, err := servesResource(dc, v1alpha1.GroupVersion.String(), "nodepolicies")
	if err != nil || !served {
		return false, err
	}
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	opts.ByObject[&v1alpha1.NodePolicy{}] = cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", nodeName)}
	return true, nil
}

// watchNodePolicy watches the node's NodePolicy (the cache holds no
// other).
func (r *Reconciler) watchNodePolicy(b *builder.Builder) *builder.Builder {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return b.Watches(&v1alpha1.NodePolicy{}, handler.Funcs{
		CreateFunc:  func(ctx context.Context, e crevent.CreateEvent, q queue) { r.nodePolicyChanged(ctx, e.Object, q) },
		UpdateFunc:  func(ctx context.Context, e crevent.UpdateEvent, q queue) { r.nodePolicyChanged(ctx, e.ObjectNew, q) },
		DeleteFunc:  func(ctx context.Context, _ crevent.DeleteEvent, q queue) { r.nodePolicyChanged(ctx, nil, q) },
		GenericFunc: func(ctx context.Context, e crevent.GenericEvent, q queue) { r.nodePolicyChanged(ctx, e.Object, q) },
	})
}

// nodePolicyChanged parses the node's NodePolicy (nil: there is none)
// and requeues the pods whose interfaces' policies changed. One that
// cannot be read leaves the last one read in place: dropping it would
// open interfaces that tenants' policies isolate.
func (r *Reconciler) nodePolicyChanged(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	var spec v1alpha1.NodePolicySpec
	if np, ok := obj.(*v1alpha1.NodePolicy); ok && np != nil {
		if np.Name != r.NodeName {
			return
		}
		spec = np.Spec
	}
	listed, err := netpolicy.ReadNodeSpec(spec)
	if err != nil {
		logf.FromContext(ctx).Error(err, "NodePolicy unreadable: the last one read stays in force", "node", r.NodeName)
		r.Metrics.error("NodePolicyUnreadable")
		return
	}
	changed := r.policies.replace(listed)
	if len(changed) == 0 {
		return
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		logf.FromContext(ctx).Error(err, "list pods whose network policy changed")
		return
	}
	for i := range pods.Items {
		if changed[string(pods.Items[i].UID)] {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
		}
	}
}
