package netpolicies

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/pkg/netpolicy"
)

// +kubebuilder:rbac:groups=podnet.io,resources=nodepolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=podnet.io,resources=networkprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=multinetworkpolicies,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reasons of the Warning Events on MultiNetworkPolicies.
const (
	// ReasonPolicyNotHonoured: a part of the policy podnet cannot honour
	// (netpolicy.Problem); that part allows nothing.
	ReasonPolicyNotHonoured = "PolicyNotHonoured"
	// ReasonPolicyForRefused: the policy's policy-for annotation is
	// missing or refused (netpolicy.PolicyFor); it applies to no network.
	ReasonPolicyForRefused = "PolicyForRefused"
)

// Reconciler writes the NodePolicies. Its one request runs a pass over
// what changed since the last (index); it reads only the manager's cache
// and the pod index, and writes an object only when its spec differs.
type Reconciler struct {
	// Client reads from the manager's cache and writes NodePolicies.
	Client client.Client
	// Events records the policies' problems (nil: none).
	Events events.EventRecorder

	index    *index
	verdicts *verdicts
	told     told
	written  written
	// policies says whether the API server serves MultiNetworkPolicies
	// (and the controller watches them); without them only the profiles'
	// floors isolate.
	policies atomic.Bool
}

// Reconcile implements reconcile.Reconciler: one pass.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	d := r.index.take()
	if d.empty() {
		return reconcile.Result{}, nil
	}
	in, err := r.read(ctx)
	if err == nil && d.all {
		err = r.markEverything(ctx, &d, in)
	}
	if err != nil {
		r.index.restore(d)
		return reconcile.Result{}, err
	}
	nodes := union(map[string]bool{}, d.nodes)
	var problems []netpolicy.Problem
	for network := range d.networks {
		touched, ps := r.recompute(network, in)
		nodes = union(nodes, touched)
		problems = append(problems, ps...)
	}
	r.report(in, problems)
	return reconcile.Result{}, r.writeNodes(ctx, nodes)
}

// markEverything adds to a leader's first pass the networks and nodes
// the index cannot name: the networks of policies without pods, and the
// nodes of objects an earlier leader wrote.
func (r *Reconciler) markEverything(ctx context.Context, d *dirty, in *inputs) error {
	var list v1alpha1.NodePolicyList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list NodePolicies: %w", err)
	}
	d.nodes = union(d.nodes, map[string]bool{})
	for _, o := range list.Items {
		d.nodes[o.Name] = true
	}
	for _, n := range r.verdicts.nodes() {
		d.nodes[n] = true
	}
	d.networks = union(d.networks, map[string]bool{})
	for n := range in.policies {
		d.networks[n] = true
	}
	for _, n := range r.verdicts.networks() {
		d.networks[n] = true
	}
	return nil
}

// recompute evaluates one network and keeps its verdicts; it returns
// the nodes whose interfaces changed, and the policies' problems.
func (r *Reconciler) recompute(network string, in *inputs) (map[string]bool, []netpolicy.Problem) {
	pods := r.index.podsOf(network)
	policies := in.policies[network]
	if len(pods) == 0 && len(policies) == 0 {
		return r.verdicts.replace(network, nil), nil
	}
	members := make([]netpolicy.Member, len(pods))
	for i, p := range pods {
		members[i] = in.member(p, network)
	}
	verdicts, problems := netpolicy.EvaluateNetwork(policies, in.namespaces, members)
	return r.verdicts.replace(network, placements(network, pods, verdicts)), problems
}

// writeNodes brings each node's object to its verdicts; a node that
// failed is marked again, for the retry.
func (r *Reconciler) writeNodes(ctx context.Context, nodes map[string]bool) error {
	var errs []error
	for node := range nodes {
		if err := r.ensureNode(ctx, node); err != nil {
			r.index.markNode(node)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ensureNode writes node's NodePolicy when its spec differs from the
// verdicts': created when it has interfaces and is absent, patched when it
// differs. An object left without interfaces is deleted, not kept empty:
// to the agent an absent object and an empty one say the same (nothing
// isolated), and deleting it keeps no object of a node that left the
// cluster, without a watch of Nodes.
func (r *Reconciler) ensureNode(ctx context.Context, node string) error {
	want := netpolicy.NodeSpec(r.verdicts.ofNode(node))
	var have v1alpha1.NodePolicy
	err := r.Client.Get(ctx, client.ObjectKey{Name: node}, &have, client.UnsafeDisableDeepCopy)
	switch {
	case apierrors.IsNotFound(err):
		if len(want.Interfaces) == 0 {
			return nil
		}
		obj := &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: want}
		err = r.Client.Create(ctx, obj)
		if err == nil {
			r.written.set(node, obj.ResourceVersion)
		}
		if !apierrors.IsAlreadyExists(err) {
			return wrapNode(node, "create", err)
		}
		// Created since the cache saw it: patched below.
	case err != nil:
		return wrapNode(node, "get", err)
	case len(want.Interfaces) == 0:
		err := r.Client.Delete(ctx, &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: node}})
		if err == nil {
			r.written.set(node, deletedVersion)
		}
		return wrapNode(node, "delete", client.IgnoreNotFound(err))
	case apiequality.Semantic.DeepEqual(want, have.Spec):
		return nil
	}
	return wrapNode(node, "patch", r.patchSpec(ctx, node, want))
}

// patchSpec replaces an object's spec by a JSON patch that adds it
// (which, on a member that exists, replaces it): whatever the cache
// showed, the object ends with spec, and no resourceVersion can conflict.
// A merge patch would say the same, but the API server merges it into the
// object member by member and prunes nulls from every list: at a
// thousand pods on the network, a quarter of its CPU time for the write
// (TestBenchPolicyPropagation).
func (r *Reconciler) patchSpec(ctx context.Context, node string, spec v1alpha1.NodePolicySpec) error {
	type op struct {
		Op    string                  `json:"op"`
		Path  string                  `json:"path"`
		Value v1alpha1.NodePolicySpec `json:"value"`
	}
	data, err := json.Marshal([]op{{Op: "add", Path: "/spec", Value: spec}})
	if err != nil {
		return err
	}
	obj := &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := r.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data)); err != nil {
		return err
	}
	r.written.set(node, obj.ResourceVersion)
	return nil
}

// deletedVersion stands, in written, for an object this controller
// deleted.
const deletedVersion = "deleted"

// written is, per node, the resourceVersion of the NodePolicy this
// controller last wrote (deletedVersion: deleted): the watch event of its
// own write is no reason for another pass. An event that arrives before
// the write returned is not recognised, and costs the pass that finds
// nothing to write.
type written struct {
	mu       sync.Mutex
	versions map[string]string
}

func (w *written) set(node, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.versions == nil {
		w.versions = map[string]string{}
	}
	w.versions[node] = version
}

// own says whether node's object at version is this controller's last
// write.
func (w *written) own(node, version string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.versions[node]
	return ok && v == version
}

func wrapNode(node, verb string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("NodePolicy %q: %s: %w", node, verb, err)
}

// report sends each refused policy-for and each problem as a Warning
// Event on its policy, once per generation and message.
func (r *Reconciler) report(in *inputs, problems []netpolicy.Problem) {
	for _, ref := range in.refused {
		r.warn(ref.policy, ReasonPolicyForRefused, ref.message)
	}
	for _, p := range problems {
		if obj := in.objects[p.Policy]; obj != nil {
			r.warn(obj, ReasonPolicyNotHonoured, p.String())
		}
	}
}

func (r *Reconciler) warn(p *mnp.MultiNetworkPolicy, reason, message string) {
	if r.Events == nil || !r.told.first(p, message) {
		return
	}
	r.Events.Eventf(p, nil, corev1.EventTypeWarning, reason, "Enforce", "%s", message)
}

// told is, per policy UID, the messages of the Events sent for its
// current generation: a pass recomputes a network's problems every time,
// an Event is sent once.
type told map[types.UID]toldOf

type toldOf struct {
	generation int64
	messages   map[string]bool
}

// first says whether message is new for p's generation, and remembers it.
func (t told) first(p *mnp.MultiNetworkPolicy, message string) bool {
	e, ok := t[p.UID]
	if !ok || e.generation != p.Generation {
		e = toldOf{generation: p.Generation, messages: map[string]bool{}}
		t[p.UID] = e
	}
	if e.messages[message] {
		return false
	}
	e.messages[message] = true
	return true
}

// keep forgets the policies not in uids (deleted).
func (t told) keep(uids map[types.UID]bool) {
	for uid := range t {
		if !uids[uid] {
			delete(t, uid)
		}
	}
}

// inputs are what a pass reads from the manager's cache: the policies of
// each network, the floors of each profile's networks, every namespace's
// labels, and each label set read back once.
type inputs struct {
	policies   map[string][]netpolicy.Policy
	objects    map[string]*mnp.MultiNetworkPolicy // by namespace/name
	refused    []refusal
	floors     map[string]map[string]*netpolicy.Floor // profile → network
	namespaces map[string]map[string]string
	labels     map[string]map[string]string // PodInfo.Labels → its map
}

// refusal is a policy whose policy-for names no network, and why.
type refusal struct {
	policy  *mnp.MultiNetworkPolicy
	message string
}

// read gathers a pass's inputs. The objects are the cache's own, never
// copied: nothing here changes them.
func (r *Reconciler) read(ctx context.Context) (*inputs, error) {
	in := &inputs{policies: map[string][]netpolicy.Policy{}, objects: map[string]*mnp.MultiNetworkPolicy{},
		floors: map[string]map[string]*netpolicy.Floor{}, namespaces: map[string]map[string]string{}, labels: map[string]map[string]string{}}
	if err := r.readPolicies(ctx, in); err != nil {
		return nil, err
	}
	var profiles v1alpha1.NetworkProfileList
	if err := r.Client.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list NetworkProfiles: %w", err)
	}
	for _, p := range profiles.Items {
		floors, err := netpolicy.ProfileFloors(&p)
		if err != nil {
			logf.FromContext(ctx).Error(err, "policy floor refused")
		}
		in.floors[p.Name] = floors
	}
	namespaces := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NamespaceList"}}
	if err := r.Client.List(ctx, namespaces, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range namespaces.Items {
		in.namespaces[ns.Name] = ns.Labels
	}
	return in, nil
}

// readPolicies files each policy under the networks its policy-for
// names; one without a valid policy-for applies to none, and is refused.
func (r *Reconciler) readPolicies(ctx context.Context, in *inputs) error {
	if !r.policies.Load() {
		return nil
	}
	var list mnp.MultiNetworkPolicyList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("list MultiNetworkPolicies: %w", err)
	}
	uids := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		uids[p.UID] = true
		in.objects[p.Namespace+"/"+p.Name] = p
		networks, err := netpolicy.Networks(p)
		if err != nil {
			in.refused = append(in.refused, refusal{policy: p, message: err.Error() + "; the policy applies to no network"})
			continue
		}
		for _, n := range networks {
			in.policies[n] = append(in.policies[n], netpolicy.Policy{Namespace: p.Namespace, Name: p.Name, Spec: p.Spec})
		}
	}
	r.told.keep(uids)
	return nil
}

// member is a pod as one network's evaluation takes it: its labels,
// its addresses and address space there, and the floor of the profile
// that granted it the network.
func (in *inputs) member(p *infocache.PodInfo, network string) netpolicy.Member {
	labels, ok := in.labels[p.Labels]
	if !ok {
		labels = p.LabelSet()
		in.labels[p.Labels] = labels
	}
	on, _ := p.On(network)
	return netpolicy.Member{
		Pod:   netpolicy.Pod{Namespace: p.Namespace, Name: p.Name, Labels: labels, Addresses: on.Addresses},
		Floor: in.floors[on.Profile][network],
		Space: on.Space,
	}
}
