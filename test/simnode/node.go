package simnode

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/ipam"
)

// Options tune a simulated node.
type Options struct {
	// Resync is the agent's --resync (default 30s).
	Resync time.Duration
	// Concurrency is the agent's --concurrency (default 4).
	Concurrency int
	// QPS and Burst are the agent's client-side limits; 0 means none.
	QPS   float32
	Burst int
	// OldDesign runs the earlier design's cluster-wide behaviours around
	// the agent (see old.go), sweeping every OldSweep (default 5m).
	OldDesign bool
	OldSweep  time.Duration
}

// Node is one simulated node's agent.
type Node struct {
	Name       string
	Counter    *Counter
	Manager    manager.Manager
	Reconciler *agent.Reconciler
	Sweeper    *agent.Sweeper
	Dataplane  *Dataplane

	old    *oldLoops
	cancel context.CancelFunc
	done   chan error
}

// Start runs the agent of node name against the API server of cfg, with
// its own client (user agent "podnet-agent/<name>") and Counter, and
// returns once its manager runs. Stop it with Stop.
func Start(cfg *rest.Config, scheme *runtime.Scheme, name string, keys approval.Verifier, o Options) (*Node, error) {
	if o.Resync == 0 {
		o.Resync = 30 * time.Second
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	n := &Node{Name: name, Counter: &Counter{}, Dataplane: &Dataplane{}, done: make(chan error, 1)}
	c := rest.CopyConfig(cfg)
	c.UserAgent = v1alpha1.AgentName + "/" + name
	c.QPS, c.Burst = o.QPS, o.Burst
	if o.QPS == 0 {
		c.QPS, c.Burst = -1, 0
	}
	c.WrapTransport = n.Counter.Wrap
	skip := true
	cacheOpts := agent.CacheOptions(name)
	if o.OldDesign {
		cacheOpts = oldCacheOptions(name, cacheOpts)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("node %s: discovery: %w", name, err)
	}
	nodePolicy, err := agent.WatchNodePolicy(dc, &cacheOpts, name)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	mgr, err := manager.New(c, manager.Options{
		Scheme:     scheme,
		Cache:      cacheOpts,
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: manager: %w", name, err)
	}
	direct, err := client.New(c, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("node %s: client: %w", name, err)
	}
	n.Manager = mgr
	// As the agent does before it serves pods.
	alloc := ipam.New(direct, mgr.GetClient()).WithPodIndex().WithPoolBackoff(ipam.NewPoolBackoff(agent.PoolBackoffBase, agent.PoolBackoffMax))
	if _, err := alloc.LookForLegacyClaims(context.Background()); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	n.Reconciler = &agent.Reconciler{
		Client:    mgr.GetClient(),
		Events:    mgr.GetEventRecorder(v1alpha1.AgentName),
		NodeName:  name,
		Sandboxes: Sandboxes{},
		Dataplane: n.Dataplane,
		Addresses: agent.IPAM{Allocator: alloc},
		Verifier:  agent.SignedApprovals{Keys: keys, Memo: approval.NewMemo(256)},
		Grants:    agent.CachedGrants{Reader: mgr.GetClient()},
		Resync:    o.Resync,

		NodePolicy: nodePolicy,
	}
	if n.Sweeper, err = n.Reconciler.SetupWithManager(mgr, o.Concurrency); err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	if o.OldDesign {
		if o.OldSweep == 0 {
			o.OldSweep = 5 * time.Minute
		}
		n.old = &oldLoops{n: n, direct: direct, sweepEvery: o.OldSweep, every: o.Resync}
		if err := mgr.Add(n.old); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.done <- mgr.Start(ctx) }()
	return n, nil
}

// Ready reports whether the agent's readiness check passes.
func (n *Node) Ready() bool {
	return n.Sweeper.Ready(nil) == nil && (n.old == nil || n.old.swept.Load())
}

// WaitReady waits until the agent is ready and returns how long that took
// from start.
func (n *Node) WaitReady(ctx context.Context, start time.Time) (time.Duration, error) {
	for !n.Ready() {
		select {
		case err := <-n.done:
			return 0, fmt.Errorf("node %s: agent stopped before it was ready: %w", n.Name, err)
		case <-ctx.Done():
			return 0, fmt.Errorf("node %s: not ready: %w", n.Name, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return time.Since(start), nil
}

// Stop stops the agent and waits for its manager to return.
func (n *Node) Stop() error {
	n.cancel()
	err := <-n.done
	n.done <- err // a second Stop returns the same
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Sandboxes is the CRI seam of a simulated node: every pod has a sandbox,
// whose eth0 has the address PodIP gives, as a runtime reports it.
type Sandboxes struct{}

// Sandbox implements agent.Sandboxes.
func (Sandboxes) Sandbox(_ context.Context, uid string) (cri.Sandbox, error) {
	return cri.Sandbox{ID: "sim-" + uid, NetNS: "/var/run/netns/sim-" + uid, Created: time.Now(), IPs: []string{PodIP(uid)}}, nil
}

// PodIP is the address of a simulated pod's eth0. The runtime seam and the
// Kubelet ask for the same UID, so it is handed out once per UID and
// remembered; addresses come from a counter in 10.0.0.0/8, so no two pods
// share one (16 million before it wraps), and a duplicate that a bench
// counts among podnet's addresses is never the simulation's.
func PodIP(uid string) string {
	if ip, ok := podIPs.Load(uid); ok {
		return ip.(string)
	}
	n := podIPNext.Add(1)
	ip := netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)}).String()
	actual, _ := podIPs.LoadOrStore(uid, ip)
	return actual.(string)
}

var (
	podIPs    sync.Map // pod UID → eth0 address
	podIPNext atomic.Uint32
)

// Dataplane is the netlink seam of a simulated node: Apply reports the
// interfaces asked for as in place.
type Dataplane struct {
	mu       sync.Mutex
	attached map[string]int // pod UID → interfaces
	// isolated are the interfaces the last Apply of a pod gave a network
	// policy, by pod UID (only pods with one).
	isolated map[string][]string
	applies  atomic.Int64
}

// Isolated lists the interfaces the pod's last Apply gave a network
// policy (isolated ingress or egress).
func (d *Dataplane) Isolated(uid string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.isolated[uid]
}

// Applies is how many times Apply was called.
func (d *Dataplane) Applies() int64 { return d.applies.Load() }

// Attached is how many pods have interfaces.
func (d *Dataplane) Attached() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.attached)
}

// Apply implements agent.Dataplane.
func (d *Dataplane) Apply(_ context.Context, p dataplane.Pod) ([]dataplane.InterfaceStatus, error) {
	d.applies.Add(1)
	out := make([]dataplane.InterfaceStatus, 0, len(p.Interfaces))
	for _, ifc := range p.Interfaces {
		st := dataplane.InterfaceStatus{Name: ifc.Name, MAC: "02:00:00:00:00:01", MTU: max(ifc.MTU, 1500)}
		for _, a := range ifc.Addresses {
			st.IPs = append(st.IPs, a.String())
		}
		out = append(out, st)
	}
	var isolated []string
	for _, ifc := range p.Interfaces {
		if ifc.PolicyIn.Isolated || ifc.PolicyOut.Isolated {
			isolated = append(isolated, ifc.Name)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.attached == nil {
		d.attached = map[string]int{}
		d.isolated = map[string][]string{}
	}
	d.attached[p.UID] = len(p.Interfaces)
	if isolated != nil {
		d.isolated[p.UID] = isolated
	} else {
		delete(d.isolated, p.UID)
	}
	return out, nil
}

// Detach implements agent.Dataplane.
func (d *Dataplane) Detach(_ context.Context, uid, _ string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.attached, uid)
	delete(d.isolated, uid)
	return nil
}

// CollectGarbage implements agent.Dataplane: the pods it holds whose UID
// is not live are dropped.
func (d *Dataplane) CollectGarbage(_ context.Context, live func(uid string) bool) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var removed []string
	for uid := range d.attached {
		if !live(uid) {
			delete(d.attached, uid)
			delete(d.isolated, uid)
			removed = append(removed, uid)
		}
	}
	return removed, nil
}
