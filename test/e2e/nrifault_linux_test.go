package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// burstPods is how many pods a burst creates at once.
const burstPods = 30

// burstDeadline bounds the eventual waits of a burst: generous, so that a
// loaded machine only makes the test slower, never failing.
const burstDeadline = 6 * time.Minute

// TestRootE2ENRIFaults: on containerd 2 (or CRI-O:
// PODNET_E2E_NRI_RUNTIME) with NRI's default validator and podnet holding
// pods with NRI, a burst of pods whose app's first command
// records whether net1 was there with its address goes through a fault of
// the agent or of the runtime: the agent SIGKILLed while the first
// sandboxes exist (the DaemonSet restarts it), the agent SIGSTOPped for
// 30 s while pods are created, the node's runtime restarted in the
// middle of a burst (the agent's plugin reconnects). After each, every pod
// is Ready with its network, no current app container started without net1
// and its address, no address is held twice, and once the pods are deleted
// the node has no podnet link and no IPClaim of theirs is left. An app
// restarted since counts by its first run too: one whose earlier run
// (read from its previous container's log) started without them, or whose
// earlier log is lost, fails the test.
func TestRootE2ENRIFaults(t *testing.T) {
	s := setUpHoldingWithNRI(t, last)
	node := nriCluster + "-n1"
	s.testAdmin(t)
	t.Run("AgentKilledDuringBurst", func(t *testing.T) {
		s.waitAgentConnected(t)
		before := s.agentRestarts(t)
		s.faultBurst(t, "nrif-killed", node, burstPods, false, func(t *testing.T) {
			s.waitSandboxes(t, "nrif-killed", 3)
			s.signal(t, s.agentPID(t, node), syscall.SIGKILL)
		})
		// The kubelet reports the restart in the agent pod's status in
		// its own time, possibly after the burst's pods are Ready.
		eventually(t, 2*time.Minute, "the killed agent's container restarted", func(context.Context) error {
			if n := s.agentRestarts(t) - before; n == 0 {
				return errors.New("agent restarts 0: the kill did not happen")
			}
			return nil
		})
	})
	t.Run("AgentStoppedFor30s", func(t *testing.T) {
		s.waitAgentConnected(t)
		resume := s.stopAgent(t, node)
		s.faultBurst(t, "nrif-stopped", node, 10, false, func(t *testing.T) {
			time.Sleep(30 * time.Second)
			resume()
		})
	})
	t.Run("RuntimeRestartedDuringBurst", func(t *testing.T) {
		s.waitAgentConnected(t)
		s.faultBurst(t, "nrif-restarted", node, burstPods, true, func(t *testing.T) {
			s.waitSandboxes(t, "nrif-restarted", 3)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := s.cluster.RestartRuntime(ctx, node); err != nil {
				t.Fatal(err)
			}
		})
		// The pods created after the restart started past the validator,
		// which needs the plugin registered with the new containerd; the
		// agent says so too.
		eventually(t, 2*time.Minute, "the agent registered again over NRI", func(context.Context) error {
			return s.nriConnected()
		})
	})
}

// faultBurst creates n pods of app on node asking for one network (the
// caller settled the agent first: waitAgentConnected), runs
// fault while they are being created, then waits until every pod is Ready
// with net1, counts what went wrong, deletes the pods and counts what they
// left behind; it logs the counts, fails on any that is not 0 (but the
// restarts, and the lost logs of an earlier run when runtimeRestart says
// the fault restarts the runtime) and returns them.
func (s *suite) faultBurst(t *testing.T, app, node string, n int, runtimeRestart bool, fault func(t *testing.T)) burstCounts {
	t.Helper()
	t.Cleanup(func() {
		_, _ = s.kubectlErr("", "-n", tenantNS, "delete", "deployment", app, "--ignore-not-found", "--wait=false")
	})
	before := s.agentRestarts(t)
	s.apply(t, burstDeployment(t, app, node, n))
	fault(t)
	c := burstCounts{runtimeRestarted: runtimeRestart}
	if err := waitUntil(burstDeadline, func(ctx context.Context) error {
		_, err := s.podsWith(ctx, app, n, "net1")
		return err
	}); err != nil {
		t.Errorf("%d Ready %s pods with net1: not true after %s: %v", n, app, burstDeadline, err)
	}
	pods, err := s.pods(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	c.agentRestarts = s.agentRestarts(t) - before
	c.count(pods)
	for _, p := range pods {
		if !ready(p) {
			c.details = append(c.details, s.nodeLogLines(node, p.Name, 15))
		}
	}
	c.countFirstCommands(s, pods)
	s.deleteBurst(t, app, pods, &c)
	t.Logf("NRI fault %s: agent restarts %d, pods %d, ready with networks %d, apps started without networks: current %d (net1 without its address %d), earlier runs %d (containers restarted %d, earlier first command unknown %d), current first command unknown %d, duplicate addresses %d, leaked links %d, leaked IPClaims %d",
		strings.TrimPrefix(t.Name(), "TestRootE2ENRIFaults/"), c.agentRestarts, c.pods, c.readyWithNetworks, c.currentMissing, c.currentUnaddressed, c.earlierMissing, c.restarted, c.earlierUnknown, c.unknown, c.duplicates, c.leakedLinks, c.leakedClaims)
	for _, f := range c.failures(n) {
		t.Error(f)
	}
	return c
}

// burstCounts is what a burst's check counts.
type burstCounts struct {
	// agentRestarts: how many times the agent's container restarted
	// during the burst.
	agentRestarts           int32
	pods, readyWithNetworks int
	// currentMissing: current app containers whose first command did not
	// see net1; earlierMissing: the same of the previous container of an
	// app that restarted.
	currentMissing, earlierMissing int
	// currentUnaddressed: those of currentMissing that had net1 without
	// its IPv4 address.
	currentUnaddressed int
	restarted          int
	// runtimeRestarted: the fault restarted the runtime, which loses the
	// logs of the containers it restarts (earlierUnknown).
	runtimeRestarted bool
	// earlierUnknown: restarted apps whose previous container's log is
	// gone.
	earlierUnknown int
	// unknown: app containers whose first command's output is not there
	// (not started, or its log gone).
	unknown      int
	duplicates   int
	leakedLinks  int
	leakedClaims int
	details      []string
}

// failures lists the counts that must be zero and are not; earlier runs are
// reported, not failed on: the agent restarts those containers so they run
// again with their networks.
func (c *burstCounts) failures(n int) []string {
	var f []string
	if c.pods != n || c.readyWithNetworks != n {
		f = append(f, fmt.Sprintf("%d pods, %d Ready with net1, want %d", c.pods, c.readyWithNetworks, n))
	}
	if c.currentMissing != 0 || c.unknown != 0 {
		f = append(f, fmt.Sprintf("apps started without networks among current containers: %d (first command unknown: %d), want 0", c.currentMissing, c.unknown))
	}
	// An app restarted since: its first run counts, not only the
	// current one. A first run whose log is lost cannot be shown to have
	// had its networks: that fails too, unless the fault was the runtime's
	// restart, which loses the logs of the containers it restarts.
	if c.earlierMissing != 0 || (c.earlierUnknown != 0 && !c.runtimeRestarted) {
		f = append(f, fmt.Sprintf("apps whose earlier run started without networks: %d (earlier first command unknown: %d, of %d restarted), want 0", c.earlierMissing, c.earlierUnknown, c.restarted))
	}
	if c.duplicates != 0 {
		f = append(f, fmt.Sprintf("%d duplicate addresses, want 0", c.duplicates))
	}
	if c.leakedLinks != 0 || c.leakedClaims != 0 {
		f = append(f, fmt.Sprintf("%d podnet links and %d IPClaims left after the pods were deleted, want 0", c.leakedLinks, c.leakedClaims))
	}
	if len(f) > 0 && len(c.details) > 0 {
		f = append(f, "details:\n"+strings.Join(c.details, "\n"))
	}
	return f
}

// count counts the pods Ready with an address on net1 and the addresses
// that more than one interface holds.
func (c *burstCounts) count(pods []corev1.Pod) {
	c.pods = len(pods)
	holder := map[string]string{}
	for _, p := range pods {
		st, err := statusOf(p)
		if err != nil {
			c.details = append(c.details, err.Error())
			continue
		}
		if ready(p) && len(ipsOf(st, "net1")) > 0 {
			c.readyWithNetworks++
		} else {
			c.details = append(c.details, fmt.Sprintf("pod %s not Ready with net1: %s", p.Name, notReadyWhy(p)))
		}
		for _, n := range st {
			for _, ip := range n.IPs {
				if other, ok := holder[ip]; ok {
					c.duplicates++
					c.details = append(c.details, fmt.Sprintf("address %s held by %s and %s/%s", ip, other, p.Name, n.Interface))
				}
				holder[ip] = p.Name + "/" + n.Interface
			}
		}
	}
}

// notReadyWhy lists the pod's false conditions with their messages and
// the state of each container that is not running.
func notReadyWhy(p corev1.Pod) string {
	var why []string
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			why = append(why, fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message))
		}
	}
	for _, c := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		switch st := c.State; {
		case st.Waiting != nil:
			why = append(why, fmt.Sprintf("container %s waiting (restarts %d): %s %s", c.Name, c.RestartCount, st.Waiting.Reason, st.Waiting.Message))
		case st.Terminated != nil:
			why = append(why, fmt.Sprintf("container %s terminated (restarts %d): %s exit %d %s", c.Name, c.RestartCount, st.Terminated.Reason, st.Terminated.ExitCode, st.Terminated.Message))
		case st.Running != nil && !c.Ready:
			why = append(why, fmt.Sprintf("container %s running since %s, not ready (restarts %d, id %s)", c.Name, st.Running.StartedAt.Format(time.RFC3339), c.RestartCount, c.ContainerID))
		}
	}
	return strings.Join(why, "; ")
}

// nodeLogLines is the last max lines of the node's kubelet and containerd
// logs and of the cluster's agent log that name pod, so that a pod stuck
// after a fault says where it stuck.
func (s *suite) nodeLogLines(node, pod string, max int) string {
	var out []string
	for _, name := range []string{"kubelet-" + node, "runtime-" + node} {
		b, err := os.ReadFile(filepath.Join(s.cluster.Dir, "logs", name+".log"))
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		out = append(out, linesNaming(name, string(b), pod, max))
	}
	if logs, err := s.kubectlErr("", "-n", "podnet-system", "logs", "daemonset/podnet-agent", "--tail=2000"); err == nil {
		out = append(out, linesNaming("agent", logs, pod, max))
	}
	return strings.Join(out, "\n")
}

// linesNaming is the last max lines of the log that contain pod, under a
// heading naming the log.
func linesNaming(log, text, pod string, max int) string {
	var hits []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, pod) {
			hits = append(hits, l)
		}
	}
	if len(hits) > max {
		hits = hits[len(hits)-max:]
	}
	return fmt.Sprintf("%s (%d lines naming %s):\n%s", log, len(hits), pod, strings.Join(hits, "\n"))
}

// countFirstCommands reads what the app's first command printed, in the
// current container and, for an app that restarted, in the previous one.
func (c *burstCounts) countFirstCommands(s *suite, pods []corev1.Pod) {
	for _, p := range pods {
		switch out, _ := s.kubectlErr("", "-n", tenantNS, "logs", p.Name, "-c", "app"); firstCommandSaw(out) {
		case "missing":
			c.currentMissing++
			c.details = append(c.details, fmt.Sprintf("pod %s: the current app container started without net1", p.Name))
		case "unaddressed":
			c.currentMissing++
			c.currentUnaddressed++
			c.details = append(c.details, fmt.Sprintf("pod %s: the current app container started with net1 but without its IPv4 address", p.Name))
		case "":
			c.unknown++
			c.details = append(c.details, fmt.Sprintf("pod %s: no first command output in %q", p.Name, out))
		}
		if appRestarts(p) == 0 {
			continue
		}
		c.restarted++
		out, err := s.kubectlErr("", "-n", tenantNS, "logs", "-p", p.Name, "-c", "app")
		switch firstCommandSaw(out) {
		case "missing", "unaddressed":
			c.earlierMissing++
			c.details = append(c.details, fmt.Sprintf("pod %s: an earlier app container started without net1 or its address (restarts %d)", p.Name, appRestarts(p)))
		case "":
			// The runtime lost the previous container (a restarted
			// containerd): what its first command saw is unknown.
			c.earlierUnknown++
			c.details = append(c.details, fmt.Sprintf("pod %s: previous app log: %q %v", p.Name, out, err))
		}
	}
}

// burstFirstCommand is what a burst's app container runs first: as
// firstCommand, and net1 counts as there only with an IPv4 address (the
// data network's pools give one), so that a half-made link is not taken
// for the network.
const burstFirstCommand = `if ! ip link show net1 >/dev/null 2>&1; then echo FIRST-NET1-MISSING; elif ip addr show dev net1 | grep -q 'inet '; then echo FIRST-NET1-PRESENT; else echo FIRST-NET1-UNADDRESSED; fi; exec sleep 86400`

// firstCommandSaw is "present", "unaddressed" or "missing" from
// burstFirstCommand's output, "" when it printed none of them.
func firstCommandSaw(out string) string {
	switch {
	case strings.Contains(out, "FIRST-NET1-MISSING"):
		return "missing"
	case strings.Contains(out, "FIRST-NET1-UNADDRESSED"):
		return "unaddressed"
	case strings.Contains(out, "FIRST-NET1-PRESENT"):
		return "present"
	}
	return ""
}

// agentRestarts sums the restart counts of the agent's containers.
func (s *suite) agentRestarts(t *testing.T) int32 {
	t.Helper()
	var pods corev1.PodList
	if err := s.client.List(context.Background(), &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-agent"}); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "agent" {
				n += c.RestartCount
			}
		}
	}
	return n
}

// appRestarts is the restart count of the pod's app container.
func appRestarts(p corev1.Pod) int32 {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "app" {
			return c.RestartCount
		}
	}
	return 0
}

// deleteBurst deletes app's Deployment, waits until its pods are gone and
// counts the podnet links left on the node and the IPClaims of the pods
// left in the cluster.
func (s *suite) deleteBurst(t *testing.T, app string, pods []corev1.Pod, c *burstCounts) {
	t.Helper()
	node := s.cluster.Nodes[0]
	if l := hostLinks(t, node.NetNS); len(l) == 0 {
		t.Fatalf("no podnet links on %s while pods run: the leak count would prove nothing", node.Name)
	}
	uids := map[types.UID]bool{}
	for _, p := range pods {
		uids[p.UID] = true
	}
	if n, err := s.claimsOf(context.Background(), uids); err != nil || n == 0 {
		t.Fatalf("no IPClaims of %s pods while they run (%v): the leak count would prove nothing", app, err)
	}
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", app, "--wait=false")
	eventually(t, burstDeadline, "no "+app+" pod left", func(ctx context.Context) error {
		var list corev1.PodList
		if err := s.client.List(ctx, &list, client.InNamespace(tenantNS), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d pods", len(list.Items))
		}
		return nil
	})
	err := waitUntil(2*time.Minute, func(ctx context.Context) error {
		c.leakedLinks = len(hostLinks(t, node.NetNS))
		n, err := s.claimsOf(ctx, uids)
		if err != nil {
			return err
		}
		c.leakedClaims = n
		if c.leakedLinks+c.leakedClaims > 0 {
			return fmt.Errorf("%d links, %d IPClaims", c.leakedLinks, c.leakedClaims)
		}
		return nil
	})
	if err != nil {
		c.details = append(c.details, fmt.Sprintf("left after deletion: %v: links %v", err, hostLinks(t, node.NetNS)))
	}
}

// claimsOf counts the IPClaims held by the pods of uids.
func (s *suite) claimsOf(ctx context.Context, uids map[types.UID]bool) (int, error) {
	var claims podnetv1.IPClaimList
	if err := s.client.List(ctx, &claims); err != nil {
		return 0, err
	}
	n := 0
	for _, cl := range claims.Items {
		if uids[types.UID(cl.Spec.Pod.UID)] {
			n++
		}
	}
	return n, nil
}

// waitSandboxes waits until at least k of app's pods have a sandbox (an
// address of the cluster network).
func (s *suite) waitSandboxes(t *testing.T, app string, k int) {
	t.Helper()
	eventually(t, burstDeadline, fmt.Sprintf("%d %s sandboxes", k, app), func(ctx context.Context) error {
		pods, err := s.pods(ctx, app)
		if err != nil {
			return err
		}
		have := 0
		for _, p := range pods {
			if p.Status.PodIP != "" {
				have++
			}
		}
		if have < k {
			return fmt.Errorf("%d sandboxes", have)
		}
		return nil
	})
}

// waitAgentConnected waits until the agent runs and is registered over
// NRI, so that a fault starts from a settled node.
func (s *suite) waitAgentConnected(t *testing.T) {
	t.Helper()
	s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "daemonset/podnet-agent", "--timeout=180s")
	eventually(t, 2*time.Minute, "the agent registered over NRI", func(context.Context) error {
		return s.nriConnected()
	})
}

// burstDeployment is deployment() of n pods asking for the data network,
// with burstFirstCommand as the app's command (as firstCommandDeployment,
// for n pods).
func burstDeployment(t *testing.T, name, node string, n int) string {
	t.Helper()
	const sleep = `command: ["sleep", "86400"]`
	d := deployment(name, node, "data", n)
	if !strings.Contains(d, sleep) {
		t.Fatalf("deployment() no longer runs %s", sleep)
	}
	return strings.Replace(d, sleep, fmt.Sprintf("command: [\"sh\", \"-c\", %q]", burstFirstCommand), 1)
}

// waitUntil polls check until it passes or timeout, and returns its last
// error if it never passed.
func waitUntil(timeout time.Duration, check func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Second):
		}
	}
}
