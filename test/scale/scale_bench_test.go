//go:build bench

package scale

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/simnode"
	"podnet.io/podnet/test/testenv"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// The workload: 30 pods per node, half of them with one podnet network;
// churn of 1% of the pods per (compressed) minute.
const (
	podsPerNode = 30
	resync      = 5 * time.Second  // the agent's --resync, compressed from 30s
	oldSweep    = 30 * time.Second // the old --ipam-sweep, compressed from 5m
	pool        = "10.128.0.0/12"
)

// result is one run's figures.
type result struct {
	k                              int
	design                         string
	periodicPerSec                 float64
	startReads, startWrites        float64
	stopReads, stopWrites          float64
	cachedClaims                   float64
	heapPerAgentMiB                float64
	eventsPerChange                float64
	readiness                      time.Duration
	duplicates, leaked, unattached int
}

func ks(env string, def string) []int {
	v := os.Getenv(env)
	if v == "" {
		v = def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// TestBenchScale runs the scale bench for PODNET_SCALE_K (default 10) and
// the earlier design for PODNET_SCALE_OLD_K (default 10; 2 each at the
// smallest size, PODNET_BENCH_SMOKE=1).
func TestBenchScale(t *testing.T) {
	var news, olds []result
	// One subtest per run, so each run's API server is gone before the next.
	for _, k := range ks("PODNET_SCALE_K", bench.Size("10", "2")) {
		t.Run(fmt.Sprintf("new-k%d", k), func(t *testing.T) { news = append(news, runScale(t, k, false)) })
	}
	for _, k := range ks("PODNET_SCALE_OLD_K", bench.Size("10", "2")) {
		t.Run(fmt.Sprintf("old-k%d", k), func(t *testing.T) { olds = append(olds, runScale(t, k, true)) })
	}
	for _, rs := range [][]result{news, olds} {
		if len(rs) < 2 {
			continue
		}
		a, b := rs[0], rs[len(rs)-1]
		d := rs[0].design
		fmt.Printf("BENCH scale_%s_slope_cached_claims_per_agent %.2f loglog\n", d, slope(a.k, b.k, a.cachedClaims, b.cachedClaims))
		fmt.Printf("BENCH scale_%s_slope_periodic_requests %.2f loglog\n", d, slope(a.k, b.k, a.periodicPerSec, b.periodicPerSec))
	}
}

// slope is the log-log slope between two points; values at or below zero
// count as 0.01 (a slope of about 0 for a flat zero).
func slope(k1, k2 int, y1, y2 float64) float64 {
	y1, y2 = math.Max(y1, 0.01), math.Max(y2, 0.01)
	return math.Log(y2/y1) / math.Log(float64(k2)/float64(k1))
}

func runScale(t *testing.T, k int, old bool) result {
	design := "new"
	if old {
		design = "old"
	}
	r := result{k: k, design: design}
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	kubelet := simnode.Kubelet{Client: adminClient(t, env)}
	ctrlCounter := startController(t, env)
	if err := simnode.Grant(ctx, kubelet.Client, "default", "bench", "data", pool); err != nil {
		t.Fatal(err)
	}
	ap, err := simnode.NewApprover()
	if err != nil {
		t.Fatal(err)
	}
	heapBefore := heapInUse()
	nodes, events := startNodes(t, env, ap, k, old)
	var ctrlEvents atomic.Int64
	countClaimEvents(t, env, &ctrlEvents)

	// Start every pod; the networked ones must be attached.
	pods := makePods(k)
	before := total(nodes)
	runAll(t, ctx, pods, func(p *corev1.Pod) error { return startPod(ctx, ap, kubelet, p) })
	networked := waitAttached(t, nodes, k*podsPerNode/2)
	settle(nodes)
	d := total(nodes).Sub(before)
	r.startReads, r.startWrites = float64(d.Reads())/float64(networked), float64(d.Writes)/float64(networked)
	r.heapPerAgentMiB = float64(heapInUse()-heapBefore) / float64(k) / (1 << 20)

	// Steady state over two resyncs (and, for the old design, long enough
	// to include its sweep period share).
	window := 2 * resync
	if old {
		window = oldSweep
	}
	window = bench.Size(window, time.Second)
	snap, ctrlSnap := total(nodes), ctrlCounter.Snapshot()
	time.Sleep(window)
	periodic := total(nodes).Sub(snap).Total() + ctrlCounter.Snapshot().Sub(ctrlSnap).Total()
	r.periodicPerSec = float64(periodic) / window.Seconds()
	r.cachedClaims = cachedClaims(t, nodes)

	// Churn: 1% of the pods stop and as many start.
	churn := max(k*podsPerNode/100, 1)
	var gone []*corev1.Pod
	for _, p := range pods {
		if len(gone) < churn && p.Annotations[v1alpha1.NetworksAnnotation] != "" {
			gone = append(gone, p)
		}
	}
	before = total(nodes)
	runAll(t, ctx, gone, func(p *corev1.Pod) error { return kubelet.Delete(ctx, p) })
	waitAttached(t, nodes, networked-len(gone))
	settle(nodes)
	d = total(nodes).Sub(before)
	r.stopReads, r.stopWrites = float64(d.Reads())/float64(len(gone)), float64(d.Writes)/float64(len(gone))
	if c := ctrlEvents.Load(); c > 0 {
		r.eventsPerChange = float64(events.Load()) / float64(c)
	}

	r.duplicates = duplicates(t, env)
	r.readiness = restartOne(t, env, ap, nodes, old)
	r.leaked, r.unattached = deleteAll(t, ctx, env, kubelet, nodes)
	report(r)
	return r
}
