package nodecarry

import (
	"context"
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

func (*countingHost) Watch(ctx context.Context, _ func()) error { <-ctx.Done(); return nil }

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
