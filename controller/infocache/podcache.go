package infocache

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/pkg/pagedlist"
)

// PodCache is the controller's own informer of every pod of the cluster,
// holding a PodInfo per pod instead of a Pod: controller-runtime's cache
// can only store the API type, and a corev1.Pod struct alone is 1,240
// bytes however little of it is kept. Its initial list arrives in pages
// of podPageSize pods decoded straight into PodInfos
// (decodePodPage), so no full Pod is ever built for it; pods arriving by
// watch, or by a streamed initial list, are reduced as they arrive. It
// has no index: readers look a pod up by namespace and name.
//
// What it offers: Get (a pod by namespace and name, once synced),
// WaitForSync and HasSynced, deletion sources for controllers
// (Deletions) and change handlers (OnChange), called by the informer
// itself as it takes in, changes or drops a pod: no shared informer's
// buffer of notifications, which a handler added after the list grows to
// every pod of the cluster. It runs on every replica, leader or not, so
// that a new leader starts warm.
type PodCache struct {
	pagedCache[PodInfo]

	mu      sync.Mutex
	sources []*PodDeletions
	changes []func(was, now *PodInfo)
	macs    *macIndex
}

// NewPodCache makes the pod cache of the cluster cfg points to; it lists
// and watches once the manager starts it.
func NewPodCache(cfg *rest.Config) (*PodCache, error) {
	return newPodCache(cfg, podPageSize)
}

// podPageSize is the pods of one page of the initial list: ten times
// client-go's 500. In pages of 500 the list took longer than linearly in
// the pods (TestBenchController: 11 s at 50,000 pods, 61 s at 150,000),
// each page costing the API server more the larger the list; fewer pages
// cost less. A page's JSON (about 2 KiB a pod) is read and dropped page
// by page, and a page of PodInfos stays small.
const podPageSize = 10 * pagedlist.DefaultPageSize

func newPodCache(cfg *rest.Config, pageSize int64) (*PodCache, error) {
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("pod cache client: %w", err)
	}
	pc := &PodCache{macs: newMACIndex()}
	lw := &pagedListerWatcher[PodInfo]{pageSize: pageSize, page: podPager(c),
		watch: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return c.Pods(metav1.NamespaceAll).Watch(ctx, opts)
		}}
	macs := pc.macs.handler()
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			macs.AddFunc(obj)
			pc.changed(nil, obj)
		},
		UpdateFunc: func(old, obj any) {
			macs.UpdateFunc(old, obj)
			pc.changed(old, obj)
		},
		DeleteFunc: func(obj any) {
			macs.DeleteFunc(obj)
			pc.changed(obj, nil)
			pc.deleted(obj)
		},
	}
	pc.pagedCache = newPagedCache("pod", lw, &corev1.Pod{}, h, toPodInfo)
	return pc, nil
}

// DuplicateMACs returns, per network that has any, how many MACs more
// than one of its pods' interfaces hold (as the agents reported them in
// the pods' network-status), of the kinds whose interfaces each hold a
// MAC of their own.
func (c *PodCache) DuplicateMACs() map[string]int { return c.macs.Colliding() }

// OnChange registers fn to hear every pod the cache takes in (was nil),
// changes, or drops (now nil), from the initial list on, on the
// informer's goroutine and in its order, so that a record fn keeps of the
// pods never misses or reorders one. Register before the manager starts
// the cache: a handler added later misses the pods already listed. fn must
// not block, nor change the records.
func (c *PodCache) OnChange(fn func(was, now *PodInfo)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, fn)
}

// changed hands a pod the informer took in, changed or dropped to every
// change handler.
func (c *PodCache) changed(was, now any) {
	c.mu.Lock()
	fns := slices.Clone(c.changes)
	c.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	var before, after *PodInfo
	var err error
	if was != nil {
		before, err = recordOf[PodInfo](was)
	}
	if err == nil && now != nil {
		after, err = recordOf[PodInfo](now)
	}
	if err != nil {
		logf.Log.Error(err, "pod cache change")
		return
	}
	for _, fn := range fns {
		fn(before, after)
	}
}

// deleted hands a pod the informer dropped to every deletion source.
func (c *PodCache) deleted(obj any) {
	p, err := recordOf[PodInfo](obj)
	c.mu.Lock()
	ds := slices.Clone(c.sources)
	c.mu.Unlock()
	for _, d := range ds {
		if err != nil {
			logf.FromContext(d.ctx).Error(err, "pod cache deletion")
			continue
		}
		for _, r := range d.requestsOf(d.ctx, p) {
			d.q.Add(r)
		}
	}
}

// Get returns the cached pod of namespace and name, or nil when the cache
// holds none; it waits for the initial list first, so that a pod not yet
// listed is never taken for a gone one.
func (c *PodCache) Get(ctx context.Context, namespace, name string) (*PodInfo, error) {
	return c.get(ctx, namespace+"/"+name)
}

// Pod implements podReader.
func (c *PodCache) Pod(ctx context.Context, namespace, name string) (*PodInfo, error) {
	return c.Get(ctx, namespace, name)
}

// Deletions is a controller source: the requests requestsOf gives for
// every pod the cache sees deleted. Controllers wait for the cache to
// sync before they start their workers.
func (c *PodCache) Deletions(requestsOf func(context.Context, *PodInfo) []reconcile.Request) *PodDeletions {
	return &PodDeletions{pods: c, requestsOf: requestsOf}
}

type PodDeletions struct {
	pods       *PodCache
	requestsOf func(context.Context, *PodInfo) []reconcile.Request

	ctx context.Context
	q   workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Start implements source.Source.
func (s *PodDeletions) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.ctx, s.q = ctx, q
	s.pods.mu.Lock()
	defer s.pods.mu.Unlock()
	s.pods.sources = append(s.pods.sources, s)
	return nil
}

// WaitForSync implements source.SyncingSource.
func (s *PodDeletions) WaitForSync(ctx context.Context) error {
	if !s.pods.WaitForSync(ctx) {
		return fmt.Errorf("pod cache not synced: %w", ctx.Err())
	}
	return nil
}

// podPager reads one page of pods as JSON, decoded straight into
// PodInfos.
func podPager(c corev1client.CoreV1Interface) func(context.Context, metav1.ListOptions) (pageOf[PodInfo], error) {
	return func(ctx context.Context, opts metav1.ListOptions) (pageOf[PodInfo], error) {
		body, err := c.RESTClient().Get().Resource("pods").
			VersionedParams(&opts, scheme.ParameterCodec).
			SetHeader("Accept", runtime.ContentTypeJSON).
			Stream(ctx)
		if err != nil {
			return pageOf[PodInfo]{}, fmt.Errorf("list pods: %w", err)
		}
		defer body.Close()
		page, err := decodePodPage(body)
		if err != nil {
			return pageOf[PodInfo]{}, fmt.Errorf("list pods: %w", err)
		}
		out := pageOf[PodInfo]{items: make([]*PodInfo, 0, len(page.Items)), resourceVersion: page.Metadata.ResourceVersion, next: page.Metadata.Continue}
		for i := range page.Items {
			info, err := page.Items[i].podInfo()
			if err != nil {
				return pageOf[PodInfo]{}, fmt.Errorf("list pods: %w", err)
			}
			out.items = append(out.items, info)
		}
		return out, nil
	}
}
