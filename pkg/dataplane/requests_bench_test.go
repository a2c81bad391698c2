//go:build bench

package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requestsChild names the environment variable that makes
// TestBenchAttachRequests the traced attach rather than the tracer.
const requestsChild = "PODNET_BENCH_REQUESTS_CHILD"

// requestsMark is the path prefix whose openat calls mark where each
// counted attach begins and ends in the trace.
const requestsMark = "/podnet-bench-mark/"

// TestBenchAttachRequests counts the netlink requests of one first attach
// of 1 and 2 bridge networks, by podnet and by the secure floor, and of
// podnet's Apply of the same pod again, which finds nothing to change: the
// sendto and sendmsg system calls of this test binary run again under
// strace (one per route request, one per nftables transaction), between
// marks. Each pod has a primary interface, eth0, as a pod has. podnet's
// count per pod includes its plan's read of the pod; the
// per-interface figure is the 2-network count less the 1-network one.
func TestBenchAttachRequests(t *testing.T) {
	if os.Getenv(requestsChild) == "1" {
		attachForRequests(t)
		return
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("strace (hack/setup.sh installs it): %v", err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(strace, "-f", "-e", "trace=sendto,sendmsg,openat", "-o", trace,
		os.Args[0], "-test.run=^TestBenchAttachRequests$", "-test.count=1")
	cmd.Env = append(os.Environ(), requestsChild+"=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("traced attach: %v\n%s", err, out)
	}
	counts := countRequests(t, trace)
	for _, arm := range []string{"podnet", "secure_floor"} {
		one, two := counts[arm+"_1"], counts[arm+"_2"]
		if one == 0 || two <= one {
			t.Fatalf("%s: %d requests for 1 network, %d for 2: the marks were not traced", arm, one, two)
		}
		bench("attach_requests_1_bridge_net_"+arm, float64(one), "requests")
		bench("attach_requests_2_bridge_nets_"+arm, float64(two), "requests")
		bench("attach_requests_per_interface_"+arm, float64(two-one), "requests")
	}
	// An Apply that finds the pod as it should be (a resync, a
	// reconcile of a running pod): reads only.
	bench("apply_unchanged_requests_1_bridge_net", float64(counts["unchanged_1"]), "requests")
	bench("apply_unchanged_requests_2_bridge_nets", float64(counts["unchanged_2"]), "requests")
}

// countRequests reads the trace: the sendto and sendmsg calls between a
// begin mark and the next end mark count for that mark's name.
func countRequests(t *testing.T, path string) map[string]int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts, arm := map[string]int{}, ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, requestsMark); i >= 0 {
			name, _, _ := strings.Cut(line[i+len(requestsMark):], `"`)
			if what, ok := strings.CutPrefix(name, "begin-"); ok {
				arm = what
			} else {
				arm = ""
			}
			continue
		}
		// A call another thread interrupted is split in two lines: only
		// its first one, "sendto(" and not "<... sendto resumed>", counts.
		if arm != "" && (strings.Contains(line, " sendto(") || strings.Contains(line, " sendmsg(")) {
			counts[arm]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// attachForRequests is the traced side: on attachBench's node (handles,
// bridges and port-security table made), a first attach of 1 and of 2
// networks each, podnet's and the secure floor's, between marks.
func attachForRequests(t *testing.T) {
	d, node, _, _, secure := attachBench(t)
	ctx := context.Background()
	mark := func(name string) { _, _ = os.Open(requestsMark + name) }
	for _, nets := range []int{1, 2} {
		pns, p := newPod(t)
		p = benchPod(t, p, nets, 2, nets)
		sns, s := newPod(t)
		s = benchPod(t, s, nets, 2, 10+nets)
		// A pod's primary interface, a veth from the node as most
		// cluster networks make it.
		for i, ns := range []string{pns, sns} {
			run(t, "ip", "-n", node, "link", "add", fmt.Sprintf("prim%d-%d", nets, i), "type", "veth", "peer", "name", "eth0", "netns", ns)
		}
		mark(fmt.Sprintf("begin-podnet_%d", nets))
		if _, err := d.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		mark("end")
		mark(fmt.Sprintf("begin-secure_floor_%d", nets))
		secure.attach(t, s)
		mark("end")
		mark(fmt.Sprintf("begin-unchanged_%d", nets))
		if _, err := d.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		mark("end")
	}
}
