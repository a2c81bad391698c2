package infocache

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// pagedCache is the informer under each of the controller's own caches
// (PodCache, ClaimCache): it holds a small record T per object instead of
// the API type, its initial list arrives in pages decoded straight into
// records (pagedListerWatcher), and objects arriving by watch are reduced
// by its transform as they arrive. It runs on every replica, leader or
// not, so that a new leader starts warm.
type pagedCache[T any] struct {
	// what names the objects in errors ("pod", "IPClaim").
	what  string
	store toolscache.Store
	ctl   toolscache.Controller
}

func newPagedCache[T any](what string, lw *pagedListerWatcher[T], obj runtime.Object, h toolscache.ResourceEventHandler, reduce toolscache.TransformFunc) pagedCache[T] {
	store, ctl := toolscache.NewInformerWithOptions(toolscache.InformerOptions{
		ListerWatcher: lw, ObjectType: obj, Handler: h, Transform: reduce,
	})
	return pagedCache[T]{what: what, store: store, ctl: ctl}
}

// Start implements manager.Runnable: it runs the informer until ctx ends.
func (c *pagedCache[T]) Start(ctx context.Context) error {
	c.ctl.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: a standby
// replica keeps its cache warm too.
func (c *pagedCache[T]) NeedLeaderElection() bool { return false }

// HasSynced says whether the initial list is in.
func (c *pagedCache[T]) HasSynced() bool { return c.ctl.HasSynced() }

// WaitForSync waits until the initial list is in, or ctx ends (false).
func (c *pagedCache[T]) WaitForSync(ctx context.Context) bool {
	return c.ctl.HasSynced() || toolscache.WaitForCacheSync(ctx.Done(), c.ctl.HasSynced)
}

// get returns the record of key, or nil when the cache holds none; it
// waits for the initial list first, so that an object not yet listed is
// never taken for a gone one.
func (c *pagedCache[T]) get(ctx context.Context, key string) (*T, error) {
	if !c.WaitForSync(ctx) {
		return nil, fmt.Errorf("get %s %s: %s cache not synced: %w", c.what, key, c.what, ctx.Err())
	}
	obj, ok, err := c.store.GetByKey(key)
	if err != nil || !ok {
		return nil, err
	}
	return recordOf[T](obj)
}

// each calls fn with every cached record, until fn returns false. The
// records are handed out, not copied: fn must not change them.
func (c *pagedCache[T]) each(fn func(*T) bool) {
	for _, obj := range c.store.List() {
		if r, ok := obj.(*T); ok && !fn(r) {
			return
		}
	}
}

// recordOf is the record an informer handed a handler, also when it
// lost the object's final state.
func recordOf[T any](obj any) (*T, error) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	r, ok := obj.(*T)
	if !ok {
		var want T
		return nil, fmt.Errorf("cache holds a %T, not a %T", obj, &want)
	}
	return r, nil
}

// AddToManager runs a cache in mgr, ready only once its initial list is in.
func AddToManager(mgr manager.Manager, name string, c interface {
	manager.Runnable
	HasSynced() bool
}) error {
	if err := mgr.Add(c); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	err := mgr.AddReadyzCheck(name, func(*http.Request) error {
		if !c.HasSynced() {
			return errors.New(name + " not synced")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%s readiness: %w", name, err)
	}
	return nil
}

// pagedListerWatcher lists objects in pages decoded straight into records
// (page) and watches them as API objects (watch), which the informer's
// transform reduces.
type pagedListerWatcher[T any] struct {
	pageSize int64
	page     func(context.Context, metav1.ListOptions) (pageOf[T], error)
	watch    func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// ListWithContext reads every page and returns one complete list, with
// the first page's resource version.
func (lw *pagedListerWatcher[T]) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return listAllPages(ctx, opts, lw.pageSize, lw.page)
}

// List is ListWithContext without a context.
func (lw *pagedListerWatcher[T]) List(opts metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), opts)
}

// WatchWithContext watches the objects (a streamed initial list included).
func (lw *pagedListerWatcher[T]) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.watch(ctx, opts)
}

// Watch is WatchWithContext without a context.
func (lw *pagedListerWatcher[T]) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), opts)
}
