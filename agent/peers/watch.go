package peers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// ControllerName names the peer reconciler in logs and metrics.
const ControllerName = "podnet-agent-peers"

// Syncer is the dataplane seam: it sets the flood list of a bridge's VXLAN
// device (nil when the bridge has none on this node).
type Syncer interface {
	SyncPeers(ctx context.Context, bridge string, peers []net.IP) error
}

// Watch resolves the underlay of spanning networks for the pod reconciler
// and keeps their flood lists in step with the nodes.
type Watch struct {
	// NodeName is this agent's node.
	NodeName string
	// Nodes reads the trimmed Node objects (the manager's cache).
	Nodes client.Reader
	// Dataplane applies flood lists.
	Dataplane Syncer
	// Resync re-applies every flood list this often (a cache read, no API
	// request), which mends a device created from a node list that a
	// change overtook; 0 means one minute.
	Resync time.Duration

	mu sync.Mutex
	// bridges are the spanning bridges this agent has attached pods to,
	// with their underlay family. A bridge whose last pod left stays: its
	// SyncPeers is a no-op until a pod brings the device back.
	bridges map[string]corev1.IPFamily
}

// NodeAddresses are this node's InternalIPs and every other node's (each
// family sorted, without duplicates), from the cache. The pod reconciler
// derives a VXLAN interface's source and flood list from them.
func (w *Watch) NodeAddresses(ctx context.Context) (own, others []net.IP, err error) {
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
		others = append(others, Peers(nodes, w.NodeName, family)...)
	}
	return own, others, nil
}

// Track remembers a spanning bridge of this node, so that node changes
// reach its flood list.
func (w *Watch) Track(bridge string, family corev1.IPFamily) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bridges == nil {
		w.bridges = map[string]corev1.IPFamily{}
	}
	w.bridges[bridge] = family
}

func (w *Watch) list(ctx context.Context) ([]corev1.Node, error) {
	var list corev1.NodeList
	if err := w.Nodes.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list nodes from the cache: %w", err)
	}
	return list.Items, nil
}

// Reconcile sets the flood list of every spanning bridge of this node
// from the nodes in the cache. Every request means "the node set changed".
func (w *Watch) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	nodes, err := w.list(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	w.mu.Lock()
	bridges := make(map[string]corev1.IPFamily, len(w.bridges))
	for b, f := range w.bridges {
		bridges[b] = f
	}
	w.mu.Unlock()
	var errs []error
	for bridge, family := range bridges {
		if err := w.Dataplane.SyncPeers(ctx, bridge, Peers(nodes, w.NodeName, family)); err != nil {
			errs = append(errs, fmt.Errorf("sync peers of bridge %q: %w", bridge, err))
		}
	}
	resync := w.Resync
	if resync <= 0 {
		resync = time.Minute
	}
	return reconcile.Result{RequeueAfter: resync}, errors.Join(errs...)
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
	if _, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Node{}); err != nil {
		return fmt.Errorf("peers: node informer: %w", err)
	}
	if w.Nodes == nil {
		w.Nodes = mgr.GetCache()
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

// changes lets through joins, leaves and address changes, not heartbeats.
var changes = predicate.TypedFuncs[client.Object]{
	UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
		old, ok1 := e.ObjectOld.(*corev1.Node)
		cur, ok2 := e.ObjectNew.(*corev1.Node)
		return !ok1 || !ok2 || addressesChanged(old, cur)
	},
}
