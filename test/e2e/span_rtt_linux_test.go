package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/test/bench"
)

// spanStaticIP is the address node 2's first pod of the overlay asks for,
// so node 1's pod can ping it before the pod exists.
const spanStaticIP = "192.168.62.250"

// benchSpan measures, on a two-node cluster with podnet installed, the
// e2e profile, its tenant and the span profile: the time from node 2's
// first pod of a VXLAN network being scheduled to the first ping from node
// 1's pod answered over the overlay; then pod-to-pod round-trip times over
// the VXLAN network across nodes, over a node-local bridge network on one
// node, and over eth0 across nodes (the underlay path, for reference),
// interleaved in rounds of count pings, and prints them as BENCH lines.
// TestBenchSpan runs it on a cluster of its own; TestRootE2E at its
// smallest size inside NetworksSpanNodes.
func (s *suite) benchSpan(t *testing.T, rounds, count int) {
	s.apply(t, deployment("rtt-vx-1", node1, "span-vx", 1))
	first := s.waitPodsWith(t, "rtt-vx-1", 1, "net1")[0]
	firstPing := s.benchFirstPing(t, first)
	fmt.Printf("BENCH span_vxlan_first_ping_after_scheduled %.0f ms\n", float64(firstPing)/float64(time.Millisecond))

	second := s.waitPodsWith(t, "rtt-vx-2", 1, "net1")[0]
	s.apply(t, deployment("rtt-local", node1, "data", 2))
	locals := s.waitPodsWith(t, "rtt-local", 2, "net1")
	localSt, _ := statusOf(locals[1])
	localV4, _ := splitFamilies(ipsOf(localSt, "net1"))

	paths := []struct {
		name     string
		from, to string
	}{
		{"vxlan_cross_node", first.Name, spanStaticIP},
		{"bridge_node_local", locals[0].Name, localV4[0]},
		{"eth0_cross_node", first.Name, second.Status.PodIP},
	}
	sums := make([]float64, len(paths))
	for range rounds {
		for i, p := range paths {
			avg, err := s.pingAvg(p.from, p.to, count)
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			sums[i] += avg
		}
	}
	for i, p := range paths {
		fmt.Printf("BENCH span_rtt_%s %.3f ms\n", p.name, sums[i]/float64(rounds))
	}
	fmt.Printf("BENCH span_rtt_ratio_vxlan_to_local_bridge %.2f x\n", sums[0]/sums[1])
	fmt.Printf("BENCH span_rtt_ratio_vxlan_to_eth0_cross_node %.2f x\n", sums[0]/sums[2])
	fmt.Printf("BENCH span_bench_machine_loadavg_1m %s load\n", bench.LoadAverage())
}

// benchFirstPing starts, in pod from (node 1), a loop that pings
// spanStaticIP until one reply comes and prints it; then creates node 2's
// pod with that address once the loop runs, and returns the time from its scheduling (seen on
// polling) to the reply line (seen on the exec's stream). The loop pings
// ten times a second; a neighbour that failed to resolve is retried by
// the kernel once a second, which bounds the resolution of the figure.
func (s *suite) benchFirstPing(t *testing.T, from corev1.Pod) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	loop := fmt.Sprintf("echo started; until ping -i 0.1 -w 2 %s | grep -m1 'bytes from'; do :; done", spanStaticIP)
	cmd := exec.CommandContext(ctx, s.in.Kubectl(), "-n", tenantNS, "exec", from.Name, "-c", "app", "--", "sh", "-c", loop)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	started, replied := make(chan struct{}), make(chan time.Time, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "started" {
				close(started)
			}
			if strings.Contains(sc.Text(), "bytes from") {
				replied <- time.Now()
				return
			}
		}
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatalf("the ping loop in %s did not start", from.Name)
	}
	scheduled := s.pollScheduled(ctx, "rtt-vx-2")
	request := fmt.Sprintf(`[{"name":"span-vx","interface":"net1","ips":["%s/24"]}]`, spanStaticIP)
	s.apply(t, deployment("rtt-vx-2", node2, request, 1))
	var at time.Time
	select {
	case at = <-scheduled:
	case <-ctx.Done():
		t.Fatal("node 2's pod was not scheduled")
	}
	select {
	case r := <-replied:
		return r.Sub(at)
	case <-ctx.Done():
		t.Fatalf("no ping answered across nodes from %s to %s", from.Name, spanStaticIP)
		return 0
	}
}

// pollScheduled returns a channel that receives the time a pod of app is
// first seen bound to a node, reading the pods every 10 ms (a watch opened
// right after the API server starts may be refused and would then see the
// binding late or never).
func (s *suite) pollScheduled(ctx context.Context, app string) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			pods, err := s.pods(ctx, app)
			if err == nil && len(pods) > 0 && pods[0].Spec.NodeName != "" {
				at <- time.Now()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return at
}

var rttAvg = regexp.MustCompile(`min/avg/max = [0-9.]+/([0-9.]+)/`)

// pingAvg is busybox ping's average round-trip time in ms.
func (s *suite) pingAvg(from, to string, count int) (float64, error) {
	out, err := s.exec(from, "ping", "-q", "-c", strconv.Itoa(count), "-i", "0.05", to)
	if err != nil {
		return 0, fmt.Errorf("ping %s from %s: %w\n%s", to, from, err, out)
	}
	m := rttAvg.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("ping %s from %s: no round-trip line in %q", to, from, out)
	}
	return strconv.ParseFloat(m[1], 64)
}
