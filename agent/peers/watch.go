package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/underlay"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// ControllerName names the peer reconciler in logs and metrics.
const ControllerName = "podnet-agent-peers"

// Syncer is the dataplane seam: it sets the flood list of a bridge's VXLAN
// device (nil when the bridge has none on this node) and lists podnet's
// VXLAN devices.
type Syncer interface {
	SyncPeers(ctx context.Context, bridge string, peers []net.IP) error
	SpanDevices(ctx context.Context) ([]dataplane.SpanDevice, error)
}

// Lock is the seam of the node's tunnel table (*underlay.Table).
type Lock interface {
	Apply(underlay.Ruleset) error
}

// Watch resolves the underlay of spanning networks for the pod reconciler,
// keeps their flood lists in step with the nodes, locks the node's tunnel
// ports to the peers and publishes the VNIs this node carries.
type Watch struct {
	// NodeName is this agent's node.
	NodeName string
	// Nodes reads the trimmed Node objects (the manager's cache).
	Nodes client.Reader
	// Writer patches this node's VNI annotation (nil: the manager's
	// client).
	Writer client.Writer
	// Dataplane applies flood lists and lists the devices.
	Dataplane Syncer
	// Lock applies the node's tunnel table.
	Lock Lock
	// Resync re-applies every flood list this often (a cache read, no API
	// request), which mends a device created from a node list that a
	// change overtook; 0 means one minute.
	Resync time.Duration

	// syncMu serialises syncs: Track's and the reconciler's.
	syncMu sync.Mutex
	// applied is the last table written (nil: none yet, since start).
	applied *underlay.Ruleset
	// refused is the last list of nodes left out for their address.
	refused []string
	// stopped: podnet is being uninstalled (Stop); sync does nothing.
	stopped bool

	mu sync.Mutex
	// spans are the spanning bridges this agent has attached pods to,
	// with when they were last tracked. A bridge whose device is gone
	// stays until a resync later (its first pod may still be attaching).
	spans map[string]tracked
	// podTunnels are the point-to-point VXLAN tunnels of this node's
	// pods, by pod UID (TrackTunnels).
	podTunnels map[string]podTunnels
	// devs are the node's spanning devices as the last sync listed them:
	// they hold their port and VNI against pods' tunnels.
	devs []dataplane.SpanDevice
	// inherited are the pods' tunnel locks the table held when this
	// agent started, kept for a resync (tunnels.go).
	inherited inheritedTunnels
}

type tracked struct {
	span Span
	at   time.Time
}

func (w *Watch) resync() time.Duration {
	if w.Resync <= 0 {
		return time.Minute
	}
	return w.Resync
}

// NodeAddresses are this node's InternalIPs and the peers of span, from the
// cache. The pod reconciler derives a VXLAN interface's source and flood
// list from them.
func (w *Watch) NodeAddresses(ctx context.Context, span Span) (own, others []net.IP, err error) {
	nodes, err := w.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, family := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
		for i := range nodes {
			if ip := InternalIP(&nodes[i], family); ip != nil && nodes[i].Name == w.NodeName {
				own = append(own, ip)
			}
		}
	}
	others, _ = Peers(nodes, w.NodeName, span)
	return own, others, nil
}

// Track remembers a spanning bridge of this node before its device
// exists, and syncs at once: the node's table locks the VNI to its peers
// and the node publishes the VNI before any packet of it can arrive. A
// port and VNI that a pod's point-to-point tunnel holds is refused, naming
// the pod: the node has one VXLAN device per port and VNI.
func (w *Watch) Track(ctx context.Context, bridge string, span Span) error {
	w.mu.Lock()
	if err := w.spanHeldLocked(bridge, span); err != nil {
		w.mu.Unlock()
		return err
	}
	if w.spans == nil {
		w.spans = map[string]tracked{}
	}
	w.spans[bridge] = tracked{span: span, at: time.Now()}
	w.mu.Unlock()
	return w.sync(ctx)
}

func (w *Watch) list(ctx context.Context) ([]corev1.Node, error) {
	var list corev1.NodeList
	if err := w.Nodes.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list nodes from the cache: %w", err)
	}
	return list.Items, nil
}

// Reconcile syncs; every request means "the node set changed".
func (w *Watch) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	return reconcile.Result{RequeueAfter: w.resync()}, w.sync(ctx)
}

// sync sets the flood list of every tracked bridge from the nodes in the
// cache, then plans the node's table from the devices the node has (and
// the bridges about to get one), and publishes their VNIs.
func (w *Watch) sync(ctx context.Context) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	if w.stopped {
		return nil
	}
	nodes, err := w.list(ctx)
	if err != nil {
		return err
	}
	spans := w.snapshot()
	if err := w.inherit(); err != nil {
		return err
	}
	var errs []error
	var refused []string
	for bridge, t := range spans {
		peers, out := Peers(nodes, w.NodeName, t.span)
		refused = append(refused, out...)
		if err := w.Dataplane.SyncPeers(ctx, bridge, peers); err != nil {
			errs = append(errs, fmt.Errorf("sync peers of bridge %q: %w", bridge, err))
		}
	}
	w.report(ctx, refused)
	devs, err := w.Dataplane.SpanDevices(ctx)
	if err != nil {
		return fmt.Errorf("list vxlan devices: %w", err)
	}
	w.mu.Lock()
	w.devs = devs
	w.mu.Unlock()
	tunnels, vnis := w.tunnels(nodes, spans, devs)
	pods, inherited := w.trackedTunnels()
	tunnels = append(tunnels, underlay.PointToPointLocks(tunnels, pods, inherited)...)
	// The table first: a VNI is published only once it is locked.
	if err := w.lock(tunnels); err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, w.publish(ctx, nodes, vnis))...)
}

// snapshot copies the tracked bridges.
func (w *Watch) snapshot() map[string]tracked {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]tracked, len(w.spans))
	for b, t := range w.spans {
		out[b] = t
	}
	return out
}

// tunnels are the overlays to lock: every podnet VXLAN device of the node
// with the flood list the kernel has (so a restarted agent locks what the
// node still carries before its pods are seen again), and every bridge
// tracked within a resync whose device is not there yet. Tracked bridges
// whose device is gone after that are forgotten.
func (w *Watch) tunnels(nodes []corev1.Node, spans map[string]tracked, devs []dataplane.SpanDevice) ([]underlay.Tunnel, []int) {
	var tunnels []underlay.Tunnel
	var vnis []int
	seen := map[int]bool{}
	add := func(port, vni int, family corev1.IPFamily, peers []net.IP) {
		if seen[vni] {
			return
		}
		seen[vni] = true
		vnis = append(vnis, vni)
		f := underlay.IPv4
		if family == corev1.IPv6Protocol {
			f = underlay.IPv6
		}
		var addrs []netip.Addr
		for _, p := range peers {
			if a, ok := netip.AddrFromSlice(p); ok {
				addrs = append(addrs, a.Unmap())
			}
		}
		tunnels = append(tunnels, underlay.VXLAN(uint16(port), uint32(vni), f, addrs))
	}
	present := map[string]bool{}
	for _, d := range devs {
		present[d.Bridge] = true
		family := corev1.IPv4Protocol
		if d.Local != nil && d.Local.To4() == nil {
			family = corev1.IPv6Protocol
		}
		add(d.Port, d.VNI, family, d.Peers)
	}
	bridges := slices.Sorted(func(yield func(string) bool) {
		for b := range spans {
			if !yield(b) {
				return
			}
		}
	})
	for _, b := range bridges {
		t := spans[b]
		switch {
		case present[b]:
		case time.Since(t.at) < w.resync():
			peers, _ := Peers(nodes, w.NodeName, t.span)
			add(t.span.Port, t.span.VNI, t.span.Family, peers)
		default:
			w.mu.Lock()
			if cur, ok := w.spans[b]; ok && cur.at.Equal(t.at) {
				delete(w.spans, b)
			}
			w.mu.Unlock()
		}
	}
	return tunnels, vnis
}

// lock writes the node's table when it differs from the last one written.
func (w *Watch) lock(tunnels []underlay.Tunnel) error {
	rs, err := underlay.Plan(tunnels)
	if err != nil {
		return fmt.Errorf("plan the tunnel table: %w", err)
	}
	if w.applied != nil && reflect.DeepEqual(*w.applied, rs) {
		return nil
	}
	if err := w.Lock.Apply(rs); err != nil {
		return fmt.Errorf("tunnel table: %w", err)
	}
	w.applied = &rs
	return nil
}

// publish sets this node's VNI annotation to vnis when it says otherwise.
func (w *Watch) publish(ctx context.Context, nodes []corev1.Node, vnis []int) error {
	want := FormatVNIs(vnis)
	i := slices.IndexFunc(nodes, func(n corev1.Node) bool { return n.Name == w.NodeName })
	if i < 0 {
		return fmt.Errorf("node %q is not in the cache", w.NodeName)
	}
	have, ok := nodes[i].Annotations[v1alpha1.NodeVNIsAnnotation]
	if have == want && (ok || want == "") {
		return nil
	}
	var value any = want
	if want == "" {
		value = nil
	}
	patch, err := jsonMergePatch(value)
	if err != nil {
		return err
	}
	node := &corev1.Node{}
	node.Name = w.NodeName
	if err := w.Writer.Patch(ctx, node, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return fmt.Errorf("publish vnis %q on node %q: %w", want, w.NodeName, err)
	}
	return nil
}

// report logs the nodes left out for their address, when that changes.
func (w *Watch) report(ctx context.Context, refused []string) {
	slices.Sort(refused)
	refused = slices.Compact(refused)
	if slices.Equal(refused, w.refused) {
		return
	}
	w.refused = refused
	refusedPeers.Set(float64(len(refused)))
	if len(refused) > 0 {
		log.FromContext(ctx).Info("nodes left out of vxlan flood lists and tunnel tables for their underlay address", "refused", refused)
	}
}

// nodeSetKey is the one request every Node event maps to: the flood lists
// depend on the whole node set, so a burst of changes is one reconcile.
var nodeSetKey = reconcile.Request{}

// SetupWithManager starts the Node informer now, so the cache sync that
// readiness waits for includes it, and registers the reconciler. The
// manager's cache must trim Nodes with Trim (see the agent's CacheOptions).
func (w *Watch) SetupWithManager(mgr manager.Manager) error {
	if w.NodeName == "" {
		return errors.New("peers: node name must not be empty")
	}
	if w.Lock == nil {
		return errors.New("peers: no tunnel table")
	}
	if _, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Node{}); err != nil {
		return fmt.Errorf("peers: node informer: %w", err)
	}
	if w.Nodes == nil {
		w.Nodes = mgr.GetCache()
	}
	if w.Writer == nil {
		w.Writer = mgr.GetClient()
	}
	toNodeSet := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{nodeSetKey}
	})
	err := builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&corev1.Node{}, toNodeSet, builder.WithPredicates(changes)).
		Complete(w)
	if err != nil {
		return fmt.Errorf("peers controller: %w", err)
	}
	return nil
}

// changes lets through joins, leaves, address and VNI changes, not
// heartbeats.
var changes = predicate.TypedFuncs[client.Object]{
	UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
		old, ok1 := e.ObjectOld.(*corev1.Node)
		cur, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || relevantChange(old, cur)
	},
}
