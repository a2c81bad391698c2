package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/test/testenv"
)

// TestRootAgentAttachMetricAfterRestart checks that the attach histogram
// counts only the attaches the running agent performed: a pod attached by
// the agent before a restart is adopted by the new agent without an
// observation, and a pod attached after the restart is observed once.
func TestRootAgentAttachMetricAfterRestart(t *testing.T) {
	w := newWorld(t)
	tenant := w.ensureNamespace("tenant")
	agent := w.startAgent()

	old := w.createPod(tenant, "before", w.approvedAnnotations(tenant, data))
	w.runSandbox(old)
	w.waitCondition(tenant, "before", corev1.ConditionTrue, "NetworksAttached", waitFor)
	waitMetric(t, agent.metrics, "podnet_agent_attach_seconds_count 1")

	agent.Stop(t, syscall.SIGTERM, 20*time.Second)
	agent = w.startAgent()
	// The restarted agent has reconciled the adopted pod once it counts
	// it; a resync (--resync 2s) reconciles it again before the check.
	waitMetric(t, agent.metrics, "podnet_agent_pods 1")
	time.Sleep(3 * time.Second)
	if body := scrape(t, agent.metrics); !strings.Contains(body, "podnet_agent_attach_seconds_count 0") {
		t.Errorf("after the restart, the adopted pod was observed:\n%s", grepMetric(body, "podnet_agent_attach_seconds_count"))
	}

	fresh := w.createPod(tenant, "after", w.approvedAnnotations(tenant, data))
	w.runSandbox(fresh)
	w.waitCondition(tenant, "after", corev1.ConditionTrue, "NetworksAttached", waitFor)
	waitMetric(t, agent.metrics, "podnet_agent_pods 2")
	time.Sleep(3 * time.Second)
	if body := scrape(t, agent.metrics); !strings.Contains(body, "podnet_agent_attach_seconds_count 1\n") {
		t.Errorf("after a new attach, want exactly one observation:\n%s", grepMetric(body, "podnet_agent_attach_seconds_count"))
	}
}

// waitMetric waits until the agent's /metrics has the line want.
func waitMetric(t *testing.T, addr, want string) {
	t.Helper()
	testenv.Eventually(t, waitFor, want, func(context.Context) error {
		// The agent may not serve /metrics yet.
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if body := string(b); !strings.Contains(body, want+"\n") {
			return fmt.Errorf("/metrics has %q", grepMetric(body, strings.Fields(want)[0]))
		}
		return nil
	})
}

// grepMetric returns the lines of body that start with name.
func grepMetric(body, name string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, name) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
