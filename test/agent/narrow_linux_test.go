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

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// testNarrowing narrows profile "test" under the running pod "two" (net1
// on data at MTU 9000, net3 on extra), with an agent whose resync is far
// beyond the test, so that only the profile watch can bring the change: a
// lower mtu.max lowers net1's MTU in place (same link), network extra moved
// to another bridge detaches net3 and its node end; the profile widened
// again gives the pod back what its approval signs. It returns the agent
// it leaves running.
func (w *world) testNarrowing(t *testing.T, agent *agentProc, pod *corev1.Pod, podNS, hostNS *netlink.Handle) *agentProc {
	agent.Stop(t, syscall.SIGTERM, 20*time.Second)
	agent = w.startAgent("--resync", "10m")
	waitManaged(t, agent, 1, 2)
	net1 := podLinks(t, podNS)["net1"]
	if net1.Attrs().MTU != 9000 {
		t.Fatalf("net1 MTU %d before the change, want 9000", net1.Attrs().MTU)
	}

	w.editProfile(t, func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[0].MTU.Max = new(int32(1500)) })
	start := time.Now()
	testenv.Eventually(t, waitFor, "net1 MTU lowered to 1500", func(context.Context) error {
		if l := podLinks(t, podNS)["net1"]; l == nil || l.Attrs().MTU != 1500 {
			return fmt.Errorf("net1 %v", l)
		}
		return nil
	})
	t.Logf("mtu.max lowered: net1 at MTU 1500 after %v", time.Since(start).Round(time.Millisecond))
	if now := podLinks(t, podNS)["net1"].Attrs().Index; now != net1.Attrs().Index {
		t.Errorf("net1 re-created (index %d → %d), not changed in place", net1.Attrs().Index, now)
	}
	got := w.waitCondition(pod.Namespace, pod.Name, corev1.ConditionTrue, "GrantNarrowed", waitFor)
	if c := condition(got); !strings.Contains(c, `net1 (network "data"): mtu 9000 lowered to 1500`) || !strings.Contains(c, "above the maximum mtu 1500") {
		t.Errorf("condition message %q", c)
	}
	w.expectEventNaming(t, pod, corev1.EventTypeWarning, "GrantNarrowed", "mtu 9000 lowered to 1500")
	w.waitLinks(t, podNS, "net1", "net3")

	// Network extra moves to another bridge: net3 cannot follow in place.
	w.editProfile(t, func(p *v1alpha1.NetworkProfile) { p.Spec.Networks[2].Bridge.Name = "pnbr-other" })
	start = time.Now()
	w.waitLinksWithin(t, podNS, waitFor, "net1")
	t.Logf("bridge changed: net3 detached after %v", time.Since(start).Round(time.Millisecond))
	got = w.waitCondition(pod.Namespace, pod.Name, corev1.ConditionFalse, "GrantRevoked", waitFor)
	if c := condition(got); !strings.Contains(c, `net3 (network "extra"): bridge pnbr-extra is now pnbr-other`) || !strings.Contains(c, "mtu 9000 lowered to 1500") {
		t.Errorf("condition message %q", c)
	}
	w.expectEventNaming(t, pod, corev1.EventTypeWarning, "GrantRevoked", "bridge pnbr-extra is now pnbr-other")
	testenv.Eventually(t, waitFor, "net3's node end and bridge gone", func(context.Context) error {
		if n := nodeLinksOf(t, hostNS, pod.UID); len(n) != 1 {
			return fmt.Errorf("node links %v, want net1's alone", n)
		}
		if _, err := hostNS.LinkByName("pnbr-extra"); err == nil {
			return fmt.Errorf("bridge pnbr-extra left without ports")
		}
		return nil
	})
	if _, err := hostNS.LinkByName("pnbr-other"); err == nil {
		t.Error("bridge pnbr-other created: a detached interface must not move")
	}

	// Widened again: the signed approval is the upper bound, and all of it
	// comes back.
	w.editProfile(t, func(p *v1alpha1.NetworkProfile) { p.Spec.Networks = testProfile().Spec.Networks })
	w.waitLinks(t, podNS, "net1", "net3")
	w.waitCondition(pod.Namespace, pod.Name, corev1.ConditionTrue, "NetworksAttached", waitFor)
	if l := podLinks(t, podNS)["net1"]; l.Attrs().MTU != 9000 {
		t.Errorf("net1 MTU %d after widening, want the approved 9000", l.Attrs().MTU)
	}
	agent.Stop(t, syscall.SIGTERM, 20*time.Second)
	return w.startAgent()
}

// expectEventNaming waits for an Event of type and reason on the pod
// whose note contains text.
func (w *world) expectEventNaming(t *testing.T, p *corev1.Pod, typ, reason, text string) {
	t.Helper()
	testenv.Eventually(t, waitFor, fmt.Sprintf("%s event %s naming %q on pod %s", typ, reason, text, p.Name), func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := w.env.Client.List(ctx, &list, client.InNamespace(p.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.UID == p.UID && e.Type == typ && e.Reason == reason && strings.Contains(e.Note, text) {
				t.Logf("event %s: %s", e.Reason, e.Note)
				return nil
			}
		}
		return fmt.Errorf("%d events, none matching", len(list.Items))
	})
}

// waitManaged waits until a (re)started agent's metrics show it manages
// pods pods with ifaces interfaces: it has reconciled them itself.
func waitManaged(t *testing.T, agent *agentProc, pods, ifaces int) {
	t.Helper()
	testenv.Eventually(t, waitFor, "restarted agent manages the pods", func(context.Context) error {
		resp, err := http.Get("http://" + agent.metrics + "/metrics")
		if err != nil {
			return err // the agent is still starting
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body := string(b)
		if err != nil || !strings.Contains(body, fmt.Sprintf("podnet_agent_pods %d\n", pods)) || !strings.Contains(body, fmt.Sprintf("podnet_agent_interfaces %d\n", ifaces)) {
			return fmt.Errorf("metrics do not show the %d pods' %d interfaces yet", pods, ifaces)
		}
		return nil
	})
}
