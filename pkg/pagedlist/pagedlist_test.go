package pagedlist

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
)

// pages is a lister of n metadata items served in pages of the asked
// limit, recording the options of each call (a fake: the glue's unit test;
// the real API server is in pagedlist_integration_test.go).
type pages struct {
	n     int
	calls []metav1.ListOptions
	err   error
}

func (p *pages) List(opts metav1.ListOptions) (runtime.Object, error) {
	p.calls = append(p.calls, opts)
	if p.err != nil {
		return nil, p.err
	}
	start := 0
	if opts.Continue != "" {
		fmt.Sscanf(opts.Continue, "from-%d", &start)
	}
	end := min(start+int(opts.Limit), p.n)
	if opts.Limit == 0 {
		end = p.n
	}
	list := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for i := start; i < end; i++ {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("o%d", i), Annotations: map[string]string{"big": strings.Repeat("x", 100)},
		}})
	}
	if end < p.n {
		list.Continue = fmt.Sprintf("from-%d", end)
		remaining := int64(p.n - end)
		list.RemainingItemCount = &remaining
	}
	return list, nil
}

func (p *pages) Watch(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }

// dropAnnotations trims in place, counting the items it saw.
type dropAnnotations struct{ seen int }

func (d *dropAnnotations) transform(obj any) (any, error) {
	m := obj.(*metav1.PartialObjectMetadata)
	m.Annotations = nil
	d.seen++
	return m, nil
}

func TestListReadsPagesAndTransformsEach(t *testing.T) {
	inner := &pages{n: 7}
	p, err := New(inner, 3)
	if err != nil {
		t.Fatal(err)
	}
	d := &dropAnnotations{}
	p.SetTransform(d.transform)
	// A reflector's first list: resourceVersion "0", any state.
	out, err := p.List(metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "a=b"})
	if err != nil {
		t.Fatal(err)
	}
	list := out.(*metav1.PartialObjectMetadataList)
	if len(list.Items) != 7 || d.seen != 7 || list.ResourceVersion != "42" || list.Continue != "" || list.RemainingItemCount != nil {
		t.Fatalf("list of %d items (transformed %d), rv %q, continue %q, remaining %v", len(list.Items), d.seen, list.ResourceVersion, list.Continue, list.RemainingItemCount)
	}
	for i, it := range list.Items {
		if it.Name != fmt.Sprintf("o%d", i) || it.Annotations != nil {
			t.Errorf("item %d: %+v", i, it.ObjectMeta)
		}
	}
	want := []metav1.ListOptions{
		{LabelSelector: "a=b", Limit: 3},
		{LabelSelector: "a=b", Limit: 3, Continue: "from-3"},
		{LabelSelector: "a=b", Limit: 3, Continue: "from-6"},
	}
	if fmt.Sprint(inner.calls) != fmt.Sprint(want) {
		t.Fatalf("calls\n%v\nwant\n%v", inner.calls, want)
	}
}

func TestListKeepsAnExplicitResourceVersion(t *testing.T) {
	inner := &pages{n: 2}
	p, _ := New(inner, 3)
	opts := metav1.ListOptions{ResourceVersion: "17", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
	if _, err := p.List(opts); err != nil {
		t.Fatal(err)
	}
	if got := inner.calls[0]; got.ResourceVersion != "17" || got.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || got.Limit != 3 {
		t.Fatalf("first page asked with %+v", got)
	}
}

func TestListFailsLoudly(t *testing.T) {
	if _, err := New(&pages{}, 0); err == nil || !strings.Contains(err.Error(), "page size 0") {
		t.Fatalf("New with page size 0: %v", err)
	}
	boom := errors.New("boom")
	p, _ := New(&pages{n: 5, err: boom}, 2)
	if _, err := p.ListWithContext(context.Background(), metav1.ListOptions{}); !errors.Is(err, boom) {
		t.Fatalf("inner error lost: %v", err)
	}
	p, _ = New(&pages{n: 5}, 2)
	p.SetTransform(func(any) (any, error) { return nil, boom })
	if _, err := p.List(metav1.ListOptions{}); !errors.Is(err, boom) {
		t.Fatalf("transform error lost: %v", err)
	}
	p.SetTransform(func(any) (any, error) { return "not an object", nil })
	if _, err := p.List(metav1.ListOptions{}); err == nil || !strings.Contains(err.Error(), "string") {
		t.Fatalf("non-object transform result: %v", err)
	}
}

func TestInformerTransformTrimsThePages(t *testing.T) {
	inner := &pages{n: 1200}
	inf := NewInformer(inner, &metav1.PartialObjectMetadata{}, 0, toolscache.Indexers{})
	d := &dropAnnotations{}
	if err := inf.SetTransform(d.transform); err != nil {
		t.Fatal(err)
	}
	out, err := inf.(*informer).lw.List(metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.(*metav1.PartialObjectMetadataList).Items); n != 1200 || d.seen != 1200 || len(inner.calls) != 3 {
		t.Fatalf("%d items, %d transformed, %d pages; want 1200, 1200, 3", n, d.seen, len(inner.calls))
	}
}
