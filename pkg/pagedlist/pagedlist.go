package pagedlist

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// DefaultPageSize is client-go's own page size for lists.
const DefaultPageSize = 500

// ListerWatcher lists in pages of PageSize items, passing each item
// through the transform as its page arrives, and passes watches through.
type ListerWatcher struct {
	lw        toolscache.ListerWatcherWithContext
	pageSize  int64
	transform atomic.Pointer[toolscache.TransformFunc]
}

// New wraps lw; pageSize must be positive.
func New(lw toolscache.ListerWatcher, pageSize int64) (*ListerWatcher, error) {
	if pageSize <= 0 {
		return nil, fmt.Errorf("page size %d: must be positive", pageSize)
	}
	return &ListerWatcher{lw: toolscache.ToListerWatcherWithContext(lw), pageSize: pageSize}, nil
}

// SetTransform sets what every listed item goes through (nil: nothing).
func (p *ListerWatcher) SetTransform(f toolscache.TransformFunc) {
	p.transform.Store(&f)
}

// ListWithContext reads the list page by page and returns one list of
// every transformed item, with the resource version of the pages.
func (p *ListerWatcher) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	opts = FirstPage(opts, p.pageSize)
	var list runtime.Object
	var items []runtime.Object
	for {
		page, err := p.lw.ListWithContext(ctx, opts)
		if err != nil {
			return nil, err
		}
		if items, err = p.appendItems(items, page); err != nil {
			return nil, err
		}
		pageMeta, err := meta.ListAccessor(page)
		if err != nil {
			return nil, fmt.Errorf("list page: %w", err)
		}
		if list == nil {
			list = page
		}
		if pageMeta.GetContinue() == "" {
			break
		}
		opts = NextPage(opts, pageMeta.GetContinue())
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	// The first page's metadata stands for the whole list, which is
	// complete: no continuation and nothing remaining.
	listMeta.SetContinue("")
	listMeta.SetRemainingItemCount(nil)
	return list, nil
}

// FirstPage asks for a first page of pageSize items, of the latest state
// where a reflector asked for resourceVersion "0" (any state, answered
// whole from the watch cache): the latest state is as new as any, and
// only it is paginated.
func FirstPage(opts metav1.ListOptions, pageSize int64) metav1.ListOptions {
	if opts.ResourceVersion == "0" {
		opts.ResourceVersion = ""
		opts.ResourceVersionMatch = ""
	}
	opts.Limit = pageSize
	opts.Continue = ""
	return opts
}

// NextPage continues a list: the token carries the resource version, and
// the API server refuses one given beside it.
func NextPage(opts metav1.ListOptions, token string) metav1.ListOptions {
	opts.Continue = token
	opts.ResourceVersion = ""
	opts.ResourceVersionMatch = ""
	return opts
}

// appendItems appends the page's items, each transformed, to items.
func (p *ListerWatcher) appendItems(items []runtime.Object, page runtime.Object) ([]runtime.Object, error) {
	objs, err := meta.ExtractList(page)
	if err != nil {
		return nil, fmt.Errorf("list page items: %w", err)
	}
	var transform toolscache.TransformFunc
	if f := p.transform.Load(); f != nil {
		transform = *f
	}
	for _, o := range objs {
		if transform != nil {
			t, err := transform(o)
			if err != nil {
				return nil, fmt.Errorf("transform listed item: %w", err)
			}
			var ok bool
			if o, ok = t.(runtime.Object); !ok {
				return nil, fmt.Errorf("transform listed item: returned %T, not an API object", t)
			}
		}
		items = append(items, o)
	}
	return items, nil
}

// List is ListWithContext without a context.
func (p *ListerWatcher) List(opts metav1.ListOptions) (runtime.Object, error) {
	return p.ListWithContext(context.Background(), opts)
}

// WatchWithContext is the wrapped watch, unchanged (including a streamed
// initial list).
func (p *ListerWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return p.lw.WatchWithContext(ctx, opts)
}

// Watch is the wrapped watch without a context.
func (p *ListerWatcher) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return p.lw.WatchWithContext(context.Background(), opts)
}

// informer is a shared informer whose transform also trims the pages of
// its initial list.
type informer struct {
	toolscache.SharedIndexInformer
	lw *ListerWatcher
}

func (i *informer) SetTransform(f toolscache.TransformFunc) error {
	if err := i.SharedIndexInformer.SetTransform(f); err != nil {
		return err
	}
	i.lw.SetTransform(f)
	return nil
}

// NewInformer is a constructor for controller-runtime's
// cache.Options.NewInformer: a standard shared informer that lists in
// pages of DefaultPageSize items and trims each page with the transform
// the cache sets on it.
func NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	paged := &ListerWatcher{lw: toolscache.ToListerWatcherWithContext(lw), pageSize: DefaultPageSize}
	return &informer{SharedIndexInformer: toolscache.NewSharedIndexInformer(paged, obj, resync, indexers), lw: paged}
}
