package nodecarry

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	toolscache "k8s.io/client-go/tools/cache"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/pkg/hostdev"
)

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch

// DefaultResync is how often the node is probed again when nothing told
// the labeler to: kernel modules send no notification.
const DefaultResync = 5 * time.Minute

// DefaultSpacing is the least time between the starts of two probes a
// kick asked for. A change asks for a probe only when a need names its
// link or address (touches), but a flapping NIC, or the profiles of a
// busy cluster, would otherwise have the node probed back to back, each
// probe listing every link of the node. A kick after a quiet spell
// probes at once.
const DefaultSpacing = time.Second

// Host probes the node, read-only.
type Host interface {
	// Probe returns the node's links, addresses and kernel modules (at
	// least those named by needs); Labels and InternalIPs are not its.
	Probe(ctx context.Context, needs []carry.Need) (carry.Node, error)
	// Watch calls changed whenever a link or address of the node appears,
	// changes or goes, until ctx ends.
	Watch(ctx context.Context, changed func(Change)) error
}

// Change is one change of the node's links or addresses.
type Change struct {
	// Links names the link that changed: its name now and, when it was
	// renamed, its name before. Empty for an address.
	Links []string
	// Address is the address that came or went (zero for a link).
	Address netip.Addr
}

// touches says whether a change may change what the node satisfies of
// needs: only links and addresses that a need names are probed for.
// Every pod start adds links (its host-side veth, a bridge port) and
// their link-local addresses, which no need names.
func touches(needs []carry.Need, c Change) bool {
	for _, n := range needs {
		switch n.What {
		case carry.NeedLink:
			if slices.Contains(c.Links, n.Name) {
				return true
			}
		case carry.NeedAddress:
			if a, err := netip.ParseAddr(n.Name); err == nil && c.Address.IsValid() && a.Unmap() == c.Address.Unmap() {
				return true
			}
		case carry.NeedHostDevice:
			// A NIC taken by a pod, given back, or plugged.
			if slices.ContainsFunc(c.Links, func(l string) bool { return mayMatch([]hostdev.Selector{n.Devices}, l) }) {
				return true
			}
		}
	}
	return false
}

// mayMatch says whether a link of this name may be one of the selectors'
// NICs: its name matches one's patterns, or one selects by driver or PCI
// address only, or VFs (whose PF a name cannot tell).
func mayMatch(sels []hostdev.Selector, name string) bool {
	return slices.ContainsFunc(sels, func(s hostdev.Selector) bool {
		return s.VFs || len(s.Names) == 0 || hostdev.Selector{Names: s.Names}.Matches(hostdev.NIC{Name: name})
	})
}

// Labeler keeps the carry labels of its own Node (see the package doc).
type Labeler struct {
	NodeName string
	// Profiles reads NetworkProfiles (the agent's cache).
	Profiles client.Reader
	// Node reads this node's Node (a cache of that one object, TrimOwnNode).
	Node client.Reader
	// Writer patches this node's labels.
	Writer client.Writer
	Host   Host
	// Resync is the period of a probe nobody asked for (DefaultResync
	// when zero).
	Resync time.Duration
	// Spacing is the least time between the starts of two probes
	// (DefaultSpacing when zero); kicks meanwhile are one probe after it.
	Spacing time.Duration
	// Changed, when set, is called after a probe whose answer for the
	// node's pods differs from the last one (the satisfied needs or the
	// Node's labels).
	Changed func()
	// Probed, when set, is called after the first probe and after each
	// whose answer changed: what the node publishes of itself (its DRA
	// ResourceSlices) follows.
	Probed func()
	// Off, when set and true (podnet is being uninstalled), makes every
	// Sync remove the carry labels instead of writing them.
	Off func() bool

	kick chan struct{}
	once sync.Once

	mu      sync.Mutex
	have    carry.Node
	known   bool
	summary string
	// needs are those of the last probe; a change that touches none of
	// them asks for no probe (a change of the profiles does).
	needs []carry.Need
}

func (l *Labeler) init() {
	l.once.Do(func() { l.kick = make(chan struct{}, 1) })
}

// Kick asks for a probe soon; kicks while one is pending are one.
func (l *Labeler) Kick() {
	l.init()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// changed kicks a probe when c touches a need of the last probe, or
// before the first.
func (l *Labeler) changed(c Change) {
	l.mu.Lock()
	needs, known := l.needs, l.known
	l.mu.Unlock()
	if !known || touches(needs, c) {
		l.Kick()
	}
}

// Have returns what the node had at the last probe, and whether there
// was one.
func (l *Labeler) Have() (carry.Node, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.have, l.known
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every
// agent labels its own node.
func (l *Labeler) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable: a probe at once, then on each kick
// and each resync. A failed probe is retried at the next kick or resync.
func (l *Labeler) Start(ctx context.Context) error {
	l.init()
	log := logf.FromContext(ctx).WithName("nodecarry")
	go func() {
		if err := l.Host.Watch(ctx, l.changed); err != nil && ctx.Err() == nil {
			log.Error(err, "watch the node's links; probing on resync only")
		}
	}()
	every := l.Resync
	if every <= 0 {
		every = DefaultResync
	}
	spacing := l.Spacing
	if spacing <= 0 {
		spacing = DefaultSpacing
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		// This probe answers every kick so far.
		select {
		case <-l.kick:
		default:
		}
		began := time.Now()
		if err := l.Sync(ctx); err != nil {
			log.Error(err, "probe what the node can carry")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-l.kick:
		case <-t.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(spacing - time.Since(began)):
		}
	}
}

// Sync probes the node once, writes its carry labels when they differ,
// and calls Changed when the answer for its pods changed.
func (l *Labeler) Sync(ctx context.Context) error {
	var profiles v1alpha1.NetworkProfileList
	if err := l.Profiles.List(ctx, &profiles); err != nil {
		return fmt.Errorf("node %q: list networkprofiles: %w", l.NodeName, err)
	}
	needs := carry.NeedsOfProfiles(profiles.Items)
	have, err := l.Host.Probe(ctx, needs)
	if err != nil {
		return fmt.Errorf("node %q: probe: %w", l.NodeName, err)
	}
	var node corev1.Node
	if err := l.Node.Get(ctx, client.ObjectKey{Name: l.NodeName}, &node); err != nil {
		return fmt.Errorf("node %q: get: %w", l.NodeName, err)
	}
	have.InternalIPs = internalIPs(&node)
	have.Labels = node.Labels
	satisfied := have.Satisfied(needs)
	if l.Off != nil && l.Off() {
		satisfied = nil
	}
	if changes := planLabels(node.Labels, satisfied); changes != nil {
		patch, err := labelPatch(changes)
		if err != nil {
			return err
		}
		target := &corev1.Node{}
		target.Name = l.NodeName
		if err := l.Writer.Patch(ctx, target, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			return fmt.Errorf("node %q: write carry labels: %w", l.NodeName, err)
		}
		have.Labels = applyLabels(node.Labels, changes)
		logf.FromContext(ctx).Info("carry labels changed", "node", l.NodeName, "changes", changes)
	}
	sum := summary(satisfied, have.Labels, have.NICs)
	l.mu.Lock()
	first, changed := !l.known, l.known && sum != l.summary
	l.have, l.known, l.summary, l.needs = have, true, sum, needs
	l.mu.Unlock()
	if changed && l.Changed != nil {
		l.Changed()
	}
	if (first || changed) && l.Probed != nil {
		l.Probed()
	}
	return nil
}

// Unlabel removes the carry labels while Off (an uninstall); it
// implements agent.NodeLabels.
func (l *Labeler) Unlabel(ctx context.Context) error { return l.Sync(ctx) }

// Relabel asks for a probe, which writes the labels again once Off is
// false; it implements agent.NodeLabels.
func (l *Labeler) Relabel() { l.Kick() }

// OwnNodeCache is a cache of this node's Node alone, trimmed to its
// labels and InternalIPs; the manager starts it.
func OwnNodeCache(mgr manager.Manager, nodeName string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", nodeName), Transform: TrimOwnNode},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("cache of node %q: %w", nodeName, err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("cache of node %q: %w", nodeName, err)
	}
	return c, nil
}

// SetupWithManager wires the labeler: the cache of its own Node (Node,
// unless set), a probe on every change of it and of the profiles, and
// the labeler itself as a runnable.
func (l *Labeler) SetupWithManager(mgr manager.Manager) error {
	if l.NodeName == "" || l.Host == nil {
		return errors.New("nodecarry: node name and host must be set")
	}
	l.init()
	ctx := context.Background()
	if l.Node == nil {
		c, err := OwnNodeCache(mgr, l.NodeName)
		if err != nil {
			return err
		}
		inf, err := c.GetInformer(ctx, &corev1.Node{})
		if err != nil {
			return fmt.Errorf("nodecarry: node informer: %w", err)
		}
		if _, err := inf.AddEventHandler(l.kickHandler()); err != nil {
			return fmt.Errorf("nodecarry: node informer: %w", err)
		}
		l.Node = c
	}
	if l.Profiles == nil {
		l.Profiles = mgr.GetCache()
	}
	if l.Writer == nil {
		l.Writer = mgr.GetClient()
	}
	inf, err := mgr.GetCache().GetInformer(ctx, &v1alpha1.NetworkProfile{})
	if err != nil {
		return fmt.Errorf("nodecarry: profile informer: %w", err)
	}
	if _, err := inf.AddEventHandler(l.kickHandler()); err != nil {
		return fmt.Errorf("nodecarry: profile informer: %w", err)
	}
	return mgr.Add(l)
}

func (l *Labeler) kickHandler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { l.Kick() },
		UpdateFunc: func(any, any) { l.Kick() },
		DeleteFunc: func(any) { l.Kick() },
	}
}
