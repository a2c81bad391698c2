//go:build bench

package dataplane

import (
	"context"
	"fmt"
	"net"
	"os"
	benchfig "podnet.io/podnet/test/bench"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// The figures below are printed, never asserted: timing depends on the
// machine. Each compares podnet with a baseline measured in the same run.

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func bench(name string, value float64, unit string) {
	fmt.Printf("BENCH %s %.3f %s\n", name, value, unit)
}

// benchPod is a pod with n bridge networks spread over the bridges.
func benchPod(t testing.TB, p Pod, n, bridges, host int) Pod {
	for i := range n {
		p.Interfaces = append(p.Interfaces, Interface{
			Name: fmt.Sprintf("net%d", i+1), Kind: KindBridge, Bridge: fmt.Sprintf("pnbr-%d", i%bridges),
			Addresses: []net.IPNet{cidr(t, fmt.Sprintf("10.%d.%d.%d/16", 100+i, host/250, host%250+1))},
		})
	}
	return p
}

// ipAttach does what Apply does for a pod of bridge networks, with the
// iproute2 commands an operator or a shell CNI plugin would run: create the
// veth into the pod netns, set the node end into the bridge and up, add the
// address, set the pod end up.
func ipAttach(t testing.TB, node, podNS string, p Pod) {
	for _, ifc := range p.Interfaces {
		host := hostName(p.UID, ifc.Name)
		run(t, "ip", "-n", node, "link", "add", host, "type", "veth", "peer", "name", ifc.Name, "netns", podNS)
		run(t, "ip", "-n", node, "link", "set", host, "master", ifc.Bridge, "up")
		run(t, "ip", "-n", podNS, "addr", "add", ifc.Addresses[0].String(), "dev", ifc.Name)
		run(t, "ip", "-n", podNS, "link", "set", ifc.Name, "up")
	}
}

func TestBenchAttachVersusIPRoute2(t *testing.T) {
	d, node := newNode(t)
	rounds := benchfig.Size(100, 3)
	ctx := context.Background()
	// The bridges exist for both, so both measure the per-pod work.
	run(t, "ip", "-n", node, "link", "add", "pnbr-0", "type", "bridge")
	run(t, "ip", "-n", node, "link", "add", "pnbr-1", "type", "bridge")
	var podnet, iproute []time.Duration
	for i := range rounds {
		nsA, a := newPod(t)
		a = benchPod(t, a, 2, 2, i)
		nsB, b := newPod(t)
		b = benchPod(t, b, 2, 2, i)

		start := time.Now()
		if _, err := d.Apply(ctx, a); err != nil {
			t.Fatal(err)
		}
		podnet = append(podnet, time.Since(start))

		start = time.Now()
		ipAttach(t, node, nsB, b)
		iproute = append(iproute, time.Since(start))

		if got := linkNames(t, nsA); !slices.Equal(got, linkNames(t, nsB)) {
			t.Fatalf("podnet and iproute2 pods differ: %v vs %v", got, linkNames(t, nsB))
		}
		if err := d.Detach(ctx, a.UID, a.NetNS); err != nil {
			t.Fatal(err)
		}
		run(t, "ip", "-n", nsB, "link", "del", "net1")
		run(t, "ip", "-n", nsB, "link", "del", "net2")
	}
	bench("attach_2_bridge_nets_podnet_p50", ms(benchfig.Percentile(podnet, 0.5)), "ms")
	bench("attach_2_bridge_nets_podnet_p99", ms(benchfig.Percentile(podnet, 0.99)), "ms")
	bench("attach_2_bridge_nets_iproute2_p50", ms(benchfig.Percentile(iproute, 0.5)), "ms")
	bench("attach_2_bridge_nets_iproute2_p99", ms(benchfig.Percentile(iproute, 0.99)), "ms")
	bench("attach_2_bridge_nets_speedup_p50", float64(benchfig.Percentile(iproute, 0.5))/float64(benchfig.Percentile(podnet, 0.5)), "x")
	bench("attach_2_bridge_nets_speedup_p99", float64(benchfig.Percentile(iproute, 0.99))/float64(benchfig.Percentile(podnet, 0.99)), "x")
}

// TestBenchScale measures the per-interface attach time on an empty node and
// on one with 1,000 podnet node veths, alternating between the two so that
// both see the same machine load, and attaches and detaches 250 pods of 4
// interfaces, counting what is left behind.
func TestBenchScale(t *testing.T) {
	empty, emptyNode := newNode(t)
	loaded, loadedNode := newNode(t)
	ctx := context.Background()
	baseline := linkNames(t, loadedNode)

	pods, perPod := benchfig.Size(250, 3), 4
	var all []Pod
	for i := range pods {
		_, p := newPod(t)
		all = append(all, benchPod(t, p, perPod, 4, i))
	}
	start := time.Now()
	for _, p := range all {
		if _, err := loaded.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	attach := time.Since(start)
	if n := len(linkNames(t, loadedNode)) - len(baseline); n != pods*perPod+4 {
		t.Fatalf("node has %d new links, want %d ports and 4 bridges", n, pods*perPod)
	}

	probe := func(d *Dataplane, i int) time.Duration {
		_, p := newPod(t)
		p = benchPod(t, p, 1, 1, 1000+i)
		p.Interfaces[0].Bridge = "pnbr-probe"
		start := time.Now()
		if _, err := d.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if err := d.Detach(ctx, p.UID, p.NetNS); err != nil {
			t.Fatal(err)
		}
		return took
	}
	var onEmpty, onLoaded []time.Duration
	for i := range benchfig.Size(60, 3) {
		onEmpty = append(onEmpty, probe(empty, i))
		onLoaded = append(onLoaded, probe(loaded, i))
	}
	if got := linkNames(t, emptyNode); len(got) != 0 {
		t.Fatalf("empty node not empty after probes: %v", got)
	}

	// A pod whose netns is already gone is found by its marks only: a sweep
	// of every node link.
	var sweeps []time.Duration
	for range benchfig.Size(20, 2) {
		start := time.Now()
		if err := loaded.Detach(ctx, "gone-"+randomHex(4), ""); err != nil {
			t.Fatal(err)
		}
		sweeps = append(sweeps, time.Since(start))
	}

	start = time.Now()
	for _, p := range all {
		if err := loaded.Detach(ctx, p.UID, p.NetNS); err != nil {
			t.Fatal(err)
		}
	}
	detach := time.Since(start)
	leftovers := len(linkNames(t, loadedNode)) - len(baseline)
	for _, p := range all {
		h, err := openHandle(p.NetNS)
		if err != nil {
			t.Fatal(err)
		}
		links, err := linkList(h)
		h.Close()
		if err != nil {
			t.Fatal(err)
		}
		leftovers += len(links) - 1 // lo
	}

	bench("attach_1_if_empty_node_p50", ms(benchfig.Percentile(onEmpty, 0.5)), "ms")
	bench("attach_1_if_1000_veths_p50", ms(benchfig.Percentile(onLoaded, 0.5)), "ms")
	bench("attach_1_if_empty_node_p99", ms(benchfig.Percentile(onEmpty, 0.99)), "ms")
	bench("attach_1_if_1000_veths_p99", ms(benchfig.Percentile(onLoaded, 0.99)), "ms")
	bench("attach_1_if_1000_veths_vs_empty_p50", float64(benchfig.Percentile(onLoaded, 0.5))/float64(benchfig.Percentile(onEmpty, 0.5)), "x")
	bench("attach_250x4_total", attach.Seconds(), "s")
	bench("detach_250x4_total", detach.Seconds(), "s")
	bench("detach_netns_gone_1000_veths_p50", ms(benchfig.Percentile(sweeps, 0.5)), "ms")
	bench("leftover_links_250x4", float64(leftovers), "links")
	if leftovers != 0 {
		t.Fatalf("%d links left behind", leftovers)
	}
}

// TestBenchNodeLinkDump measures what a dump of the node's veth ends costs
// in memory on a node of 500 pods with two networks each (1000 veth
// links): the bytes allocated per dump, and the Go heap in use at its
// highest while 16 dumps run at once, as the agent's 16 workers may when
// a resync passes over pods without networks.
func TestBenchNodeLinkDump(t *testing.T) {
	requireRoot(t)
	name, path := newNetNS(t, "dump")
	links := benchfig.Size(1000, 20)
	var b strings.Builder
	for i := range links / 2 {
		fmt.Fprintf(&b, "link add pnh%d type veth peer name pnp%d\n", i, i)
	}
	batch := t.TempDir() + "/links"
	if err := os.WriteFile(batch, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "ip", "-n", name, "-batch", batch)
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()

	workers, rounds := benchfig.Size(16, 2), benchfig.Size(10, 2)
	runtime.GC()
	var before, after, now runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range rounds {
				got, err := dumpLinks(ns, "veth", 0)
				if err == nil && len(got) != links {
					err = fmt.Errorf("dump found %d veth links, want %d", len(got), links)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var peak uint64
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
			runtime.ReadMemStats(&now)
			peak = max(peak, now.HeapInuse)
		}
	}
	runtime.ReadMemStats(&after)
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	bench("dataplane_dump_1000_veth_alloc", float64(after.TotalAlloc-before.TotalAlloc)/float64(workers*rounds)/1024, "KiB")
	bench("dataplane_dump_1000_veth_16_at_once_peak_heap_inuse", float64(peak)/(1<<20), "MiB")
}
