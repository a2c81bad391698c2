package infocache

import (
	"context"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"podnet.io/podnet/pkg/pagedlist"
)

// infoList is a list of the small records a cache of the controller's own
// holds (PodInfo, ClaimInfo), as the reflector takes it.
type infoList[T any] struct {
	metav1.TypeMeta
	metav1.ListMeta
	Items []*T
}

// DeepCopyObject implements runtime.Object; the records are never
// changed, so the copy shares them.
func (l *infoList[T]) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = slices.Clone(l.Items)
	return &c
}

// pageOf is one page of a paged list: its records, resource version and
// continue token.
type pageOf[T any] struct {
	items           []*T
	resourceVersion string
	next            string
}

// listAllPages reads every page through read and returns one complete
// list, with the first page's resource version.
func listAllPages[T any](ctx context.Context, opts metav1.ListOptions, pageSize int64, read func(context.Context, metav1.ListOptions) (pageOf[T], error)) (runtime.Object, error) {
	opts = pagedlist.FirstPage(opts, pageSize)
	out := &infoList[T]{}
	for {
		page, err := read(ctx, opts)
		if err != nil {
			return nil, err
		}
		if out.ResourceVersion == "" {
			out.ResourceVersion = page.resourceVersion
		}
		out.Items = append(out.Items, page.items...)
		if page.next == "" {
			return out, nil
		}
		opts = pagedlist.NextPage(opts, page.next)
	}
}
