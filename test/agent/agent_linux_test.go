package agent

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/testenv"
)

var (
	data = v1alpha1.ApprovedInterface{Interface: "net1", Network: "data", Profile: "test", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data",
		IPAM:   &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24"}, Gateways: []string{"192.168.100.1"}},
		Routes: []v1alpha1.ApprovedRoute{{Dst: "10.50.0.0/16", Gateway: "192.168.100.1"}}}
	storage = v1alpha1.ApprovedInterface{Interface: "net2", Network: "storage", Profile: "test", Kind: v1alpha1.KindBridge, Bridge: "pnbr-stor",
		IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.200.0/24"}, Static: []string{"192.168.200.20/24"}}}
	extra = v1alpha1.ApprovedInterface{Interface: "net3", Network: "extra", Profile: "test", Kind: v1alpha1.KindBridge, Bridge: "pnbr-extra",
		IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{"fd00:300::/64"}}}
)

const waitFor = 30 * time.Second

// revocationDeadline is what the README promises: interfaces of a revoked
// grant are gone from running pods within 10 s.
const revocationDeadline = 10 * time.Second

// TestRootAgent runs the real agent binary against a real API server and
// containerd, through the life of pods: attach at sandbox time, runtime
// add / remove / in-place MTU change, refused approvals, deletion, and a
// SIGKILL in the middle of attaching followed by a restart.
func TestRootAgent(t *testing.T) {
	w := newWorld(t)
	tenant := w.ensureNamespace("tenant")
	other := w.ensureNamespace("other")
	agent := w.startAgent()

	// The pod exists before its sandbox, as when the kubelet has not got
	// to it yet: the agent retries until the sandbox appears.
	pod := w.createPod(tenant, "two", w.approvedAnnotations(tenant, data, storage))
	time.Sleep(300 * time.Millisecond)
	w.runSandbox(pod)
	ready := w.waitCondition(tenant, "two", corev1.ConditionTrue, "NetworksAttached", waitFor)
	podNS := handleAt(t, w.sandboxNetNS(pod))
	hostNS := handleAt(t, w.hostNS)

	t.Run("two networks attached with addresses and routes", func(t *testing.T) {
		links := podLinks(t, podNS)
		if len(links) != 2 || links["net1"] == nil || links["net2"] == nil {
			t.Fatalf("pod links %v, want net1 and net2", keys(links))
		}
		a1 := globalAddrs(t, podNS, links["net1"])
		if len(a1) != 1 || !strings.HasPrefix(a1[0], "192.168.100.") || a1[0] == "192.168.100.1/24" {
			t.Errorf("net1 addresses %v, want one from 192.168.100.0/24 other than the gateway", a1)
		}
		if a2 := globalAddrs(t, podNS, links["net2"]); !slices.Equal(a2, []string{"192.168.200.20/24"}) {
			t.Errorf("net2 addresses %v, want the static 192.168.200.20/24", a2)
		}
		routes, err := nldump.Retry(func() ([]netlink.Route, error) { return podNS.RouteList(links["net1"], netlink.FAMILY_V4) })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(routes, func(r netlink.Route) bool {
			return r.Dst != nil && r.Dst.String() == "10.50.0.0/16" && r.Gw.String() == "192.168.100.1"
		}) {
			t.Errorf("routes via net1 %v, want 10.50.0.0/16 via 192.168.100.1", routes)
		}
		if n := nodeLinksOf(t, hostNS, pod.UID); len(n) != 2 {
			t.Errorf("node links of the pod %v, want 2", n)
		}
		st := ready.Annotations[v1alpha1.NetworkStatusAnnotation]
		for _, want := range []string{`[{"name":"cluster-network","interface":"eth0",`, `"default":true,"dns":{}}`, `"name":"` + tenant + `/data","interface":"net1"`, `"name":"` + tenant + `/storage","interface":"net2","ips":["192.168.200.20"]`} {
			if !strings.Contains(st, want) {
				t.Errorf("network-status %s lacks %s", st, want)
			}
		}
		claims := mustClaims(t, w, pod.UID)
		if len(claims) != 2 || !slices.Contains(claims, "storage/net2=192.168.200.20") {
			t.Errorf("claims %v, want one per interface, net2's static", claims)
		}
		w.expectEvent(t, pod, "Normal", "NetworksAttached")
	})

	t.Run("metrics", func(t *testing.T) {
		body := scrape(t, agent.metrics)
		for _, want := range []string{"podnet_agent_attach_seconds_count 1", "podnet_agent_pods 1", "podnet_agent_interfaces 2"} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
	})

	t.Run("runtime add, MTU in place, remove", func(t *testing.T) {
		before := podLinks(t, podNS)["net1"].Attrs().Index
		data9000 := data
		data9000.MTU = 9000
		w.patchAnnotations(t, pod, w.approvedFor(pod, data9000, storage, extra))
		w.waitLinks(t, podNS, "net1", "net2", "net3")
		testenv.Eventually(t, waitFor, "net1 MTU 9000 in place", func(context.Context) error {
			l := podLinks(t, podNS)["net1"]
			if l.Attrs().MTU != 9000 {
				return fmt.Errorf("MTU %d", l.Attrs().MTU)
			}
			if l.Attrs().Index != before {
				return fmt.Errorf("net1 was re-created (index %d → %d), not changed in place", before, l.Attrs().Index)
			}
			return nil
		})
		w.waitStatusEntries(t, pod, 3)
		if a3 := globalAddrs(t, podNS, podLinks(t, podNS)["net3"]); len(a3) != 1 || !strings.HasPrefix(a3[0], "fd00:300::") {
			t.Errorf("net3 addresses %v, want one from fd00:300::/64", a3)
		}

		// Drop storage: its interface, node end and claim go.
		w.patchAnnotations(t, pod, w.approvedFor(pod, data9000, extra))
		w.waitLinks(t, podNS, "net1", "net3")
		w.waitStatusEntries(t, pod, 2)
		testenv.Eventually(t, waitFor, "storage claim released", func(ctx context.Context) error {
			c, err := w.claimsOf(ctx, pod.UID)
			if err != nil {
				return err
			}
			if len(c) != 2 || slices.ContainsFunc(c, func(s string) bool { return strings.HasPrefix(s, "storage/") }) {
				return fmt.Errorf("claims %v", c)
			}
			return nil
		})
		if n := nodeLinksOf(t, hostNS, pod.UID); len(n) != 2 {
			t.Errorf("node links %v, want 2 after removing one network", n)
		}
		if l, err := hostNS.LinkByName("pnbr-stor"); err == nil {
			t.Errorf("bridge pnbr-stor (%s) left behind without ports", l.Attrs().Name)
		}
	})

	t.Run("drift repaired", func(t *testing.T) {
		// Someone deletes an interface inside the pod by hand: the periodic
		// re-check (--resync 2s) puts it back with its address.
		l := podLinks(t, podNS)["net3"]
		if err := podNS.LinkDel(l); err != nil {
			t.Fatal(err)
		}
		w.waitLinks(t, podNS, "net1", "net3")
		// The link comes first, its address a moment later.
		testenv.Eventually(t, waitFor, "net3 repaired with its address", func(context.Context) error {
			if a := globalAddrs(t, podNS, podLinks(t, podNS)["net3"]); len(a) != 1 {
				return fmt.Errorf("net3 addresses after repair %v, want one", a)
			}
			return nil
		})
	})

	t.Run("revocation detaches from the running pod", func(t *testing.T) {
		// A resync far beyond the test: only the watches on namespaces and
		// profiles can bring the revocation to the pod.
		agent.Stop(t, syscall.SIGTERM, 20*time.Second)
		agent = w.startAgent("--resync", "10m")
		// The condition is still True from before the restart: wait until
		// the new agent has reconciled the pod itself.
		waitManaged(t, agent, 1, 2)
		netns := w.sandboxNetNS(pod)

		// The admin takes network "extra" out of the profile: net3 goes,
		// with its claim; net1 stays.
		w.editProfile(t, func(p *v1alpha1.NetworkProfile) { p.Spec.Networks = p.Spec.Networks[:2] })
		start := time.Now()
		w.waitLinksWithin(t, podNS, revocationDeadline, "net1")
		t.Logf("network removed from the profile: net3 gone after %v", time.Since(start).Round(time.Millisecond))
		got := w.waitCondition(tenant, "two", corev1.ConditionFalse, "GrantRevoked", waitFor)
		if c := condition(got); !strings.Contains(c, `net3 (network "extra"): profile "test" no longer offers network "extra"`) || !strings.Contains(c, "still attached: net1") {
			t.Errorf("condition message %q", c)
		}
		w.waitClaims(t, pod.UID, 1)
		w.expectEvent(t, pod, "Warning", "GrantRevoked")
		w.editProfile(t, func(p *v1alpha1.NetworkProfile) { p.Spec.Networks = testProfile().Spec.Networks })
		w.waitLinks(t, podNS, "net1", "net3")
		w.waitCondition(tenant, "two", corev1.ConditionTrue, "NetworksAttached", waitFor)

		// The admin opts the namespace out: every interface goes within
		// seconds, the claims are released, the pod keeps running.
		w.setNamespaceLabel(t, tenant, v1alpha1.EnabledLabel, "")
		start = time.Now()
		w.waitLinksWithin(t, podNS, revocationDeadline)
		t.Logf("opt-in label removed: all interfaces gone after %v", time.Since(start).Round(time.Millisecond))
		got = w.waitCondition(tenant, "two", corev1.ConditionFalse, "GrantRevoked", waitFor)
		if c := condition(got); !strings.Contains(c, fmt.Sprintf(`namespace %q is no longer opted in`, tenant)) {
			t.Errorf("condition message %q", c)
		}
		if st := got.Annotations[v1alpha1.NetworkStatusAnnotation]; attachedEntries(st) != 0 {
			t.Errorf("network-status %s, want only the default entry", st)
		}
		w.waitClaims(t, pod.UID, 0)
		if n := nodeLinksOf(t, hostNS, pod.UID); len(n) != 0 {
			t.Errorf("node links %v after revocation", n)
		}
		if now := w.sandboxNetNS(pod); now != netns {
			t.Errorf("the pod's sandbox changed (%s → %s): the pod must keep running", netns, now)
		}

		// Opted in again: the approval, still valid, is built again.
		w.setNamespaceLabel(t, tenant, v1alpha1.EnabledLabel, "true")
		w.waitLinks(t, podNS, "net1", "net3")
		w.waitCondition(tenant, "two", corev1.ConditionTrue, "NetworksAttached", waitFor)
		agent.Stop(t, syscall.SIGTERM, 20*time.Second)
		agent = w.startAgent()
	})

	t.Run("narrowing reaches the running pod", func(t *testing.T) { agent = w.testNarrowing(t, agent, pod, podNS, hostNS) })

	t.Run("refused approvals configure nothing", func(t *testing.T) {
		// Forged: signed by a key the agent does not trust.
		forged := w.approvedAnnotations(tenant, data)
		forged[v1alpha1.ApprovedSignatureAnnotation] = otherSignature(t, forged[v1alpha1.ApprovedAnnotation])
		// Copied: a valid approval of namespace tenant on a pod of namespace other.
		copied := w.approvedAnnotations(tenant, data)
		// Altered: valid signature, payload changed (the bridge).
		altered := w.approvedAnnotations(tenant, data)
		altered[v1alpha1.ApprovedAnnotation] = strings.Replace(altered[v1alpha1.ApprovedAnnotation], "pnbr-data", "pnbr-evil", 1)
		cases := []struct {
			ns, name string
			ann      map[string]string
		}{
			{tenant, "forged", forged}, {other, "copied", copied}, {tenant, "altered", altered},
		}
		for _, c := range cases {
			p := w.createPod(c.ns, c.name, c.ann)
			w.runSandbox(p)
			got := w.waitCondition(c.ns, c.name, corev1.ConditionFalse, "InvalidApproval", waitFor)
			if links := podLinks(t, handleAt(t, w.sandboxNetNS(p))); len(links) != 0 {
				t.Errorf("%s: pod links %v, want none", c.name, keys(links))
			}
			if n := nodeLinksOf(t, hostNS, p.UID); len(n) != 0 {
				t.Errorf("%s: node links %v, want none", c.name, n)
			}
			if claims := mustClaims(t, w, p.UID); len(claims) != 0 {
				t.Errorf("%s: claims %v, want none", c.name, claims)
			}
			w.expectEvent(t, got, "Warning", "InvalidApproval")
		}
		if _, err := hostNS.LinkByName("pnbr-evil"); err == nil {
			t.Error("the altered approval's bridge exists")
		}
	})

	t.Run("deletion leaves nothing", func(t *testing.T) {
		w.deletePod(t, pod)
		testenv.Eventually(t, waitFor, "node links and claims of the deleted pod gone", func(ctx context.Context) error {
			if n := nodeLinksOf(t, hostNS, pod.UID); len(n) != 0 {
				return fmt.Errorf("node links %v", n)
			}
			if c, err := w.claimsOf(ctx, pod.UID); err != nil || len(c) != 0 {
				return fmt.Errorf("claims %v %v", c, err)
			}
			return nil
		})
		if links := podLinks(t, podNS); len(links) != 0 {
			t.Errorf("pod links %v left in the (still running) sandbox", keys(links))
		}
		for _, br := range []string{"pnbr-data", "pnbr-extra"} {
			if _, err := hostNS.LinkByName(br); err == nil {
				t.Errorf("bridge %s left without ports", br)
			}
		}
	})

	t.Run("SIGKILL while attaching, then restart", func(t *testing.T) {
		// A configured pod that will be deleted while no agent runs.
		victim := w.createPod(tenant, "victim", w.approvedAnnotations(tenant, extra))
		w.runSandbox(victim)
		w.waitCondition(tenant, "victim", corev1.ConditionTrue, "NetworksAttached", waitFor)
		if n := nodeLinksOf(t, hostNS, victim.UID); len(n) != 1 {
			t.Fatalf("victim node links %v, want 1", n)
		}

		p := w.createPod(tenant, "crash", w.approvedAnnotations(tenant, data, storage))
		// Kill the agent as soon as it has reserved the first address.
		w.runSandbox(p)
		testenv.Eventually(t, waitFor, "first claim of pod crash", func(ctx context.Context) error {
			if c, err := w.claimsOf(ctx, p.UID); err != nil || len(c) == 0 {
				return fmt.Errorf("claims %v %v", c, err)
			}
			return nil
		})
		agent.Stop(t, syscall.SIGKILL, 20*time.Second)
		w.deletePod(t, victim)

		agent = w.startAgent()
		got := w.waitCondition(tenant, "crash", corev1.ConditionTrue, "NetworksAttached", waitFor)
		ns := handleAt(t, w.sandboxNetNS(p))
		links := podLinks(t, ns)
		if len(links) != 2 {
			t.Fatalf("pod links %v, want net1 and net2", keys(links))
		}
		for name, l := range links {
			if a := globalAddrs(t, ns, l); len(a) != 1 {
				t.Errorf("%s addresses %v, want exactly one", name, a)
			}
		}
		if n := nodeLinksOf(t, hostNS, p.UID); len(n) != 2 {
			t.Errorf("node links %v, want exactly 2", n)
		}
		if c := mustClaims(t, w, p.UID); len(c) != 2 {
			t.Errorf("claims %v, want exactly 2", c)
		}
		if st := got.Annotations[v1alpha1.NetworkStatusAnnotation]; attachedEntries(st) != 2 {
			t.Errorf("network-status %s, want 2 entries besides the default one", st)
		}
		// The restarted agent never saw the victim: its start-up sweep finds
		// the node end by its mark. The claim of the dead holder is
		// podnet-controller's to free (the agent looks at no claim beyond
		// its live pods'): TestIntegrationControllerFreesClaimsOfGonePods.
		testenv.Eventually(t, waitFor, "sweep of the pod deleted while the agent was down", func(ctx context.Context) error {
			if n := nodeLinksOf(t, hostNS, victim.UID); len(n) != 0 {
				return fmt.Errorf("node links %v", n)
			}
			return nil
		})
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(victim))); len(links) != 0 {
			t.Errorf("victim pod links %v: removing the node end must take the pod end along", keys(links))
		}
	})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func mustClaims(t *testing.T, w *world, uid types.UID) []string {
	t.Helper()
	c, err := w.claimsOf(context.Background(), uid)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (w *world) patchAnnotations(t *testing.T, p *corev1.Pod, ann map[string]string) {
	t.Helper()
	patch := client.MergeFrom(p.DeepCopy())
	cur, err := w.getPod(context.Background(), p.Namespace, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	patch = client.MergeFrom(cur.DeepCopy())
	for k, v := range ann {
		cur.Annotations[k] = v
	}
	if err := w.env.Client.Patch(context.Background(), cur, patch); err != nil {
		t.Fatal(err)
	}
}

func (w *world) deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	// No kubelet confirms a graceful deletion here.
	if err := w.env.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
}

func (w *world) waitLinks(t *testing.T, h *netlink.Handle, names ...string) {
	t.Helper()
	testenv.Eventually(t, waitFor, fmt.Sprintf("pod links %v", names), func(context.Context) error {
		if got := keys(podLinks(t, h)); !slices.Equal(got, names) {
			return fmt.Errorf("links %v", got)
		}
		return nil
	})
}

// attachedEntries counts the network-status entries of podnet's
// interfaces: all but the default network's.
func attachedEntries(status string) int {
	return strings.Count(status, `"interface"`) - strings.Count(status, `"default":true`)
}

func (w *world) waitStatusEntries(t *testing.T, p *corev1.Pod, n int) {
	t.Helper()
	testenv.Eventually(t, waitFor, fmt.Sprintf("%d network-status entries", n), func(ctx context.Context) error {
		cur, err := w.getPod(ctx, p.Namespace, p.Name)
		if err != nil {
			return err
		}
		if got := attachedEntries(cur.Annotations[v1alpha1.NetworkStatusAnnotation]); got != n {
			return fmt.Errorf("%s", cur.Annotations[v1alpha1.NetworkStatusAnnotation])
		}
		return nil
	})
}

func (w *world) expectEvent(t *testing.T, p *corev1.Pod, typ, reason string) {
	t.Helper()
	w.expectEventNaming(t, p, typ, reason, "")
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// condition is the message of the pod's networks-ready condition.
func condition(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1alpha1.NetworksReadyCondition {
			return c.Message
		}
	}
	return ""
}

func (w *world) waitLinksWithin(t *testing.T, h *netlink.Handle, within time.Duration, names ...string) {
	t.Helper()
	testenv.Eventually(t, within, fmt.Sprintf("pod links %v", names), func(context.Context) error {
		if got := keys(podLinks(t, h)); !slices.Equal(got, names) {
			return fmt.Errorf("links %v", got)
		}
		return nil
	})
}

func (w *world) waitClaims(t *testing.T, uid types.UID, n int) {
	t.Helper()
	testenv.Eventually(t, waitFor, fmt.Sprintf("%d claims of pod %s", n, uid), func(ctx context.Context) error {
		c, err := w.claimsOf(ctx, uid)
		if err != nil || len(c) != n {
			return fmt.Errorf("claims %v %v", c, err)
		}
		return nil
	})
}

// editProfile changes the profile "test" as an admin would.
func (w *world) editProfile(t *testing.T, edit func(*v1alpha1.NetworkProfile)) {
	t.Helper()
	var p v1alpha1.NetworkProfile
	if err := w.env.Client.Get(context.Background(), types.NamespacedName{Name: "test"}, &p); err != nil {
		t.Fatal(err)
	}
	edit(&p)
	if err := w.env.Client.Update(context.Background(), &p); err != nil {
		t.Fatal(err)
	}
}

// setNamespaceLabel sets a label of a namespace, or removes it when value
// is empty.
func (w *world) setNamespaceLabel(t *testing.T, name, key, value string) {
	t.Helper()
	var ns corev1.Namespace
	if err := w.env.Client.Get(context.Background(), types.NamespacedName{Name: name}, &ns); err != nil {
		t.Fatal(err)
	}
	if value == "" {
		delete(ns.Labels, key)
	} else {
		ns.Labels[key] = value
	}
	if err := w.env.Client.Update(context.Background(), &ns); err != nil {
		t.Fatal(err)
	}
}
