package nodecarry

import (
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
)

// countingHost records when each probe began.
type countingHost struct {
	mu     sync.Mutex
	probes []time.Time
}

func (h *countingHost) Probe(context.Context, []carry.Need) (carry.Node, error) {
	h.mu.Lock()
	h.probes = append(h.probes, time.Now())
	h.mu.Unlock()
	return carry.Node{}, nil
}

func (*countingHost) Watch(ctx context.Context, _ func(Change)) error { <-ctx.Done(); return nil }

func (h *countingHost) seen() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Time(nil), h.probes...)
}

// TestLabelerSpacesProbes kicks the labeler without pause, as the link
// events of a burst of pods do: it probes at most once per Spacing, not
// once per kick, and still answers the last kick.
func TestLabelerSpacesProbes(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}).Build()
	host := &countingHost{}
	const spacing = 100 * time.Millisecond
	l := &Labeler{NodeName: "n1", Profiles: c, Node: c, Writer: c, Host: host, Spacing: spacing}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	start := time.Now()
	var lastKick time.Time
	for time.Since(start) < time.Second {
		l.Kick()
		lastKick = time.Now()
		time.Sleep(100 * time.Microsecond)
	}
	kicking := time.Since(start)
	// Until no probe came for three spacings.
	var probes []time.Time
	for {
		probes = host.seen()
		if len(probes) > 0 && time.Since(probes[len(probes)-1]) > 3*spacing {
			break
		}
		time.Sleep(spacing / 4)
	}
	// One at start, then at most one per spacing while kicked, and the
	// one after the last kick.
	if most := 2 + int(kicking/spacing); len(probes) > most {
		t.Errorf("%d probes for kicks over %s: want at most %d (one per %s)", len(probes), kicking, most, spacing)
	}
	if last := probes[len(probes)-1]; last.Before(lastKick) {
		t.Errorf("the last probe began %s before the last kick: that kick went unanswered", lastKick.Sub(last))
	}
}

func TestTouches(t *testing.T) {
	needs := []carry.Need{
		{What: carry.NeedLink, Name: "eth1"},
		{What: carry.NeedAddress, Name: "192.0.2.1"},
		{What: carry.NeedModule, Name: "vxlan"},
	}
	for _, tc := range []struct {
		c    Change
		want bool
	}{
		{Change{Links: []string{"eth1"}}, true},
		{Change{Links: []string{"eth9", "eth1"}}, true}, // eth1 renamed: gone
		{Change{Links: []string{"veth12ab"}}, false},    // a pod's host end
		{Change{Address: netip.MustParseAddr("192.0.2.1")}, true},
		{Change{Address: netip.MustParseAddr("::ffff:192.0.2.1")}, true},
		{Change{Address: netip.MustParseAddr("fe80::1")}, false},
		{Change{Links: []string{"vxlan"}}, false}, // a module is no link
	} {
		if got := touches(needs, tc.c); got != tc.want {
			t.Errorf("touches(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestLinkNames(t *testing.T) {
	names := map[int32]string{}
	steps := []struct {
		index   int32
		name    string
		deleted bool
		want    []string
	}{
		{3, "eth1", false, []string{"eth1"}},
		{3, "eth1", false, []string{"eth1"}},         // changed, same name
		{3, "data", false, []string{"data", "eth1"}}, // renamed
		{3, "data", true, []string{"data"}},
		{3, "eth1", false, []string{"eth1"}}, // a new link on the index
	}
	for i, s := range steps {
		if got := linkNames(names, s.index, s.name, s.deleted); !slices.Equal(got, s.want) {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
	}
}

// TestLabelerProbesOnlyForChangesItsNeedsName: before the first probe
// any change asks for one; after it, only a change of a link or address
// that a profile's network needs does.
func TestLabelerProbesOnlyForChangesItsNeedsName(t *testing.T) {
	l := &Labeler{}
	l.init()
	kicked := func() bool {
		select {
		case <-l.kick:
			return true
		default:
			return false
		}
	}
	l.changed(Change{Links: []string{"veth1"}})
	if !kicked() {
		t.Error("before the first probe: no kick")
	}
	l.mu.Lock()
	l.known, l.needs = true, []carry.Need{{What: carry.NeedLink, Name: "eth1"}}
	l.mu.Unlock()
	l.changed(Change{Links: []string{"veth1"}})
	if kicked() {
		t.Error("a link no need names: kicked")
	}
	l.changed(Change{Links: []string{"eth1"}})
	if !kicked() {
		t.Error("a needed link: no kick")
	}
}
