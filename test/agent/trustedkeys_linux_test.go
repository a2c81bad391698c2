package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/agent/runtimeready"
	"podnet.io/podnet/test/testenv"
)

// getProbe returns the status and body of the agent's probe endpoint path.
func getProbe(addr, path string) (int, string, error) {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// TestRootAgentReadyzReportsBrokenKeyFile runs the real agent binary and
// breaks its trusted-keys file under it: /readyz fails with the
// "trusted-keys" check naming the file, /metrics shows the stale gauge
// and the load error; a good file makes the agent ready again.
func TestRootAgentReadyzReportsBrokenKeyFile(t *testing.T) {
	w := newWorld(t)
	probe := testenv.FreeAddr(t)
	agent := w.startAgent("--health-probe-bind-address", probe)
	good, err := os.ReadFile(w.publicKey)
	if err != nil {
		t.Fatal(err)
	}
	ready := func(want int, body string) func(context.Context) error {
		return func(context.Context) error {
			code, got, err := getProbe(probe, "/readyz/trusted-keys")
			if err != nil {
				return err
			}
			if code != want || !strings.Contains(got, body) {
				return fmt.Errorf("/readyz/trusted-keys: %d %q, want %d with %q", code, got, want, body)
			}
			return nil
		}
	}
	testenv.Eventually(t, waitFor, "the agent ready", func(context.Context) error {
		code, body, err := getProbe(probe, "/readyz")
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("/readyz: %d %q", code, body)
		}
		return err
	})
	waitMetric(t, agent.metrics, "podnet_agent_trusted_keys_stale 0")

	if err := os.WriteFile(w.publicKey, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, "trusted-keys failing", ready(http.StatusInternalServerError, w.publicKey))
	if code, body, err := getProbe(probe, "/readyz"); err != nil || code != http.StatusInternalServerError || !strings.Contains(body, "[-]trusted-keys failed") {
		t.Fatalf("/readyz with a broken key file: %d %q %v", code, body, err)
	}
	waitMetric(t, agent.metrics, "podnet_agent_trusted_keys_stale 1")
	waitMetric(t, agent.metrics, "podnet_agent_trusted_keys_load_errors_total 1")

	if err := os.WriteFile(w.publicKey, good, 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, waitFor, "trusted-keys passing again", ready(http.StatusOK, "ok"))
	waitMetric(t, agent.metrics, "podnet_agent_trusted_keys_stale 0")
	if !strings.Contains(agent.log.String(), "trusted approval keys' file does not load") {
		t.Errorf("the agent's log lacks the line about the broken file")
	}
}

// TestRootAgentReadyzNamesItsRuntime runs the real agent binary with a CRI
// endpoint where no runtime answers, as on a CRI-O node given containerd's
// default socket: /readyz fails with the "runtime" check naming the
// endpoint and the sockets of containerd and CRI-O, and a Warning Event on
// the agent's Node says the same, for `kubectl describe node`. (Every
// other test of the agent waits for /readyz, or its rollout, with a real
// runtime answering.)
func TestRootAgentReadyzNamesItsRuntime(t *testing.T) {
	w := newWorld(t)
	probe := testenv.FreeAddr(t)
	endpoint := "unix://" + filepath.Join(t.TempDir(), "crio.sock")
	w.startAgent("--health-probe-bind-address", probe, "--cri-endpoint", endpoint)
	want := "container runtime not answering on --cri-endpoint " + endpoint
	testenv.Eventually(t, waitFor, "the runtime check failing", func(context.Context) error {
		code, body, err := getProbe(probe, "/readyz/runtime")
		if err != nil {
			return err
		}
		if code != http.StatusInternalServerError || !strings.Contains(body, want) || !strings.Contains(body, "unix:///var/run/crio/crio.sock") {
			return fmt.Errorf("/readyz/runtime: %d %q, want 500 with %q", code, body, want)
		}
		return nil
	})
	testenv.Eventually(t, waitFor, "the Node's event", func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := w.env.Client.List(ctx, &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Node" && e.Regarding.Name == w.node && e.Reason == runtimeready.ReasonUnreachable &&
				e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, want) {
				return nil
			}
		}
		return fmt.Errorf("no %s event on node %s among %d", runtimeready.ReasonUnreachable, w.node, len(list.Items))
	})
}
