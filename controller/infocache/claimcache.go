package infocache

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
)

// ClaimCache is the controller's own informer of every IPClaim, holding a
// ClaimInfo per claim instead of an IPClaim, as PodCache does for pods:
// its initial list arrives in pages of claimPageSize decoded straight into
// ClaimInfos (decodeClaimPage); claims arriving by watch are reduced as
// they arrive. Its one index, by pod UID (for pod deletions), is a map
// from the UID to the names of its claims, kept by the informer's own
// handler; the network's claims are found by a walk (the profile status
// counts every claim of a network anyway).
//
// Controllers hear of it through claim sources (source): claims created
// or deleted after the initial list; the claims already there are looked
// at by the collector's sweep (Each), not enqueued one by one. It runs on
// every replica, leader or not, so that a new leader starts warm.
type ClaimCache struct {
	pagedCache[ClaimInfo]

	mu        sync.Mutex
	byPod     map[string][]string // pod UID → claim names
	listeners []*ClaimSource
}

// claimPageSize is the claims of one page of the initial list, as for
// pods (podPageSize): a claim's JSON is about 1 KiB, a page 5 MiB.
const claimPageSize = podPageSize

// NewClaimCache makes the claim cache of the cluster cfg points to,
// decoding watched claims with s; it lists and watches once the manager
// starts it.
func NewClaimCache(cfg *rest.Config, s *runtime.Scheme) (*ClaimCache, error) {
	return newClaimCache(cfg, s, claimPageSize)
}

func newClaimCache(cfg *rest.Config, s *runtime.Scheme, pageSize int64) (*ClaimCache, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion = &v1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("claim cache client: %w", err)
	}
	c := &ClaimCache{byPod: map[string][]string{}}
	lw := &pagedListerWatcher[ClaimInfo]{pageSize: pageSize, page: claimPager(rc), watch: claimWatcher(rc)}
	c.pagedCache = newPagedCache("IPClaim", lw, &v1alpha1.IPClaim{}, c, toClaimInfo)
	return c, nil
}

// Get returns the cached claim of name, or nil when the cache holds none.
func (c *ClaimCache) Get(ctx context.Context, name string) (*ClaimInfo, error) {
	return c.get(ctx, name)
}

// Each calls fn with every cached claim, until fn returns false. The
// claims are handed out, not copied: fn must not change them.
func (c *ClaimCache) Each(fn func(*ClaimInfo) bool) { c.each(fn) }

// OfPod returns the names of the cached claims of pod UID uid.
func (c *ClaimCache) OfPod(uid string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.byPod[uid])
}

// OnAdd implements toolscache.ResourceEventHandler: the informer calls it
// after its store took the claim.
func (c *ClaimCache) OnAdd(obj any, initial bool) {
	ci, err := recordOf[ClaimInfo](obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.index(ci)
	ls := slices.Clone(c.listeners)
	c.mu.Unlock()
	if !initial {
		for _, l := range ls {
			l.added(ci)
		}
	}
}

// OnUpdate implements toolscache.ResourceEventHandler. A claim changes
// only when the next pod of a StatefulSet takes it over: its pod UID
// moves in the index; no controller looks at it again for that.
func (c *ClaimCache) OnUpdate(oldObj, newObj any) {
	old, err1 := recordOf[ClaimInfo](oldObj)
	ci, err2 := recordOf[ClaimInfo](newObj)
	if err1 != nil || err2 != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unindex(old)
	c.index(ci)
}

// OnDelete implements toolscache.ResourceEventHandler.
func (c *ClaimCache) OnDelete(obj any) {
	ci, err := recordOf[ClaimInfo](obj)
	if err != nil {
		return
	}
	c.mu.Lock()
	c.unindex(ci)
	ls := slices.Clone(c.listeners)
	c.mu.Unlock()
	for _, l := range ls {
		l.deleted(ci)
	}
}

// index and unindex keep byPod; c.mu is held.
func (c *ClaimCache) index(ci *ClaimInfo) {
	uid := ci.Spec.Pod.UID
	if !slices.Contains(c.byPod[uid], ci.Name) {
		c.byPod[uid] = append(c.byPod[uid], ci.Name)
	}
}

func (c *ClaimCache) unindex(ci *ClaimInfo) {
	uid := ci.Spec.Pod.UID
	names := slices.DeleteFunc(c.byPod[uid], func(n string) bool { return n == ci.Name })
	if len(names) == 0 {
		delete(c.byPod, uid)
		return
	}
	c.byPod[uid] = slices.Clip(names)
}

// Source is a controller Source: for every claim created or deleted after
// the initial list, the requests onAdd or onDelete give (nil: none).
func (c *ClaimCache) Source(onAdd, onDelete func(context.Context, *ClaimInfo) []reconcile.Request) *ClaimSource {
	return &ClaimSource{cache: c, onAdd: onAdd, onDelete: onDelete, started: make(chan struct{})}
}

type ClaimSource struct {
	cache           *ClaimCache
	onAdd, onDelete func(context.Context, *ClaimInfo) []reconcile.Request
	started         chan struct{} // closed once listening
	// delay enqueues each request that much later; the queue keeps one
	// of a key's delayed adds, the earliest.
	delay time.Duration

	ctx context.Context
	q   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Start implements source.Source.
func (s *ClaimSource) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.ctx, s.q = ctx, q
	s.cache.mu.Lock()
	s.cache.listeners = append(s.cache.listeners, s)
	s.cache.mu.Unlock()
	close(s.started)
	return nil
}

// WaitForSync implements source.SyncingSource.
func (s *ClaimSource) WaitForSync(ctx context.Context) error {
	if !s.cache.WaitForSync(ctx) {
		return fmt.Errorf("claim cache not synced: %w", ctx.Err())
	}
	return nil
}

// Listening waits until the source hears of new claims, or ctx ends
// (false): a walk of the cache after that misses none.
func (s *ClaimSource) Listening(ctx context.Context) bool {
	select {
	case <-s.started:
		return true
	case <-ctx.Done():
		return false
	}
}

// After makes the source enqueue its requests d After the claim event.
func (s *ClaimSource) After(d time.Duration) *ClaimSource {
	s.delay = d
	return s
}

func (s *ClaimSource) added(ci *ClaimInfo)   { s.enqueue(s.onAdd, ci) }
func (s *ClaimSource) deleted(ci *ClaimInfo) { s.enqueue(s.onDelete, ci) }

func (s *ClaimSource) enqueue(requestsOf func(context.Context, *ClaimInfo) []reconcile.Request, ci *ClaimInfo) {
	if requestsOf == nil {
		return
	}
	for _, r := range requestsOf(s.ctx, ci) {
		if s.delay > 0 {
			s.q.AddAfter(r, s.delay)
		} else {
			s.q.Add(r)
		}
	}
}

// ClaimRequest is the request for the claim itself.
func ClaimRequest(_ context.Context, ci *ClaimInfo) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: ClaimKey(ci.Name)}}
}

// optionsVersion is the version list options are encoded in for a
// resource of any group: ListOptions are registered only as meta v1.
var optionsVersion = schema.GroupVersion{Version: "v1"}

// claimPager reads one page of claims as JSON, decoded straight into
// ClaimInfos.
func claimPager(rc rest.Interface) func(context.Context, metav1.ListOptions) (pageOf[ClaimInfo], error) {
	return func(ctx context.Context, opts metav1.ListOptions) (pageOf[ClaimInfo], error) {
		body, err := rc.Get().Resource("ipclaims").
			SpecificallyVersionedParams(&opts, scheme.ParameterCodec, optionsVersion).
			SetHeader("Accept", runtime.ContentTypeJSON).
			Stream(ctx)
		if err != nil {
			return pageOf[ClaimInfo]{}, fmt.Errorf("list IPClaims: %w", err)
		}
		defer body.Close()
		page, err := decodeClaimPage(body)
		if err != nil {
			return pageOf[ClaimInfo]{}, fmt.Errorf("list IPClaims: %w", err)
		}
		out := pageOf[ClaimInfo]{items: make([]*ClaimInfo, 0, len(page.Items)), resourceVersion: page.Metadata.ResourceVersion, next: page.Metadata.Continue}
		for i := range page.Items {
			out.items = append(out.items, page.Items[i].claimInfo())
		}
		return out, nil
	}
}

// claimWatcher watches claims as IPClaims (a streamed initial list
// included); the informer's transform reduces each.
func claimWatcher(rc rest.Interface) func(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.Watch = true
		r := rc.Get().Resource("ipclaims").SpecificallyVersionedParams(&opts, scheme.ParameterCodec, optionsVersion)
		if opts.TimeoutSeconds != nil {
			r = r.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second)
		}
		return r.Watch(ctx)
	}
}

// ClaimKey is the request key of a claim (cluster-scoped: its name).
func ClaimKey(name string) types.NamespacedName { return types.NamespacedName{Name: name} }

// RequestsOfPod maps a deleted pod to its claims, through the pod UID index.
func (c *ClaimCache) RequestsOfPod(_ context.Context, pod *PodInfo) []reconcile.Request {
	names := c.OfPod(string(pod.UID))
	out := make([]reconcile.Request, len(names))
	for i, n := range names {
		out[i] = reconcile.Request{NamespacedName: ClaimKey(n)}
	}
	return out
}

// RequestsOfStatefulSet maps a StatefulSet to the claims reserved for it (those
// carrying its UID in v1alpha1.StatefulSetLabel), by a walk of the cache:
// StatefulSets change seldom.
func (c *ClaimCache) RequestsOfStatefulSet(_ context.Context, sts client.Object) []reconcile.Request {
	uid := string(sts.GetUID())
	var out []reconcile.Request
	c.Each(func(ci *ClaimInfo) bool {
		if ci.StatefulSetUID == uid {
			out = append(out, reconcile.Request{NamespacedName: ClaimKey(ci.Name)})
		}
		return true
	})
	return out
}
