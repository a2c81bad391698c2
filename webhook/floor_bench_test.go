//go:build bench

package webhook_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/test/bench"
)

// The floor bench's variants: how a pod CREATE reaches the API server's
// storage. Each has a namespace of its own, named after it.
const (
	variantNone   = "none"   // no webhook is called
	variantNoop   = "noop"   // a minimal webhook that allows and changes nothing
	variantPodnet = "podnet" // podnet's webhook, approving two networks
	variantPlain  = "plain"  // opted in to podnet, but the pod asks for nothing
	// replay is the no-op webhook answering with the patch podnet's
	// webhook answers: what the API server pays to apply podnet's change,
	// whoever decides it.
	variantReplay = "replay"
)

// The bench's webhooks other than podnet's, by name in the API server's
// metrics.
const (
	noopWebhookName   = "noop.bench.podnet.io"
	replayWebhookName = "replay.bench.podnet.io"
)

// benchRequest is a realistic request: two networks, one with a VLAN.
const benchRequest = `[{"name":"data","vlan":120},{"name":"mgmt"}]`

// TestBenchPodCreateLatency measures, on one API server and in one run,
// pod CREATE without a webhook, through a no-op webhook (the floor every
// mutating webhook pays: the API server's call, TLS, JSON), and through
// podnet's webhook deciding a two-network request among 100 profiles,
// through the no-op webhook answering podnet's patch (the API server's
// cost of podnet's change, apart from podnet's decision); and
// plain pods in an opted-in namespace, which matchConditions keep from
// any webhook. Each concurrency runs rounds that alternate the variants,
// so that load on the shared machine hits all of them alike.
func TestBenchPodCreateLatency(t *testing.T) {
	const rounds = 4
	h := startHarness(t)
	ctx := context.Background()
	c := fastClient(t, h.env)
	h.createNamespace(t, variantNone, map[string]string{"tenant": "telco"})
	h.createNamespace(t, variantNoop, map[string]string{noopWebhookName: "true", "tenant": "telco"})
	h.createNamespace(t, variantReplay, map[string]string{replayWebhookName: "true", "tenant": "telco"})
	h.createNamespace(t, variantPodnet, map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	for i := range 99 {
		p := benchProfile(fmt.Sprintf("other-%02d", i), fmt.Sprintf("other-%d", i))
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	h.createProfile(t, benchProfile("telco", "telco"))
	url := startNoopWebhook(t, h, podnetPatch(t, h))
	installNoopWebhook(t, h, noopWebhookName, url+"/noop", variantNoop)
	installNoopWebhook(t, h, replayWebhookName, url+"/replay", variantReplay)

	createVariant := func(variant, prefix string) func(int) error {
		if variant == variantPlain {
			return create(c, variantPodnet, variant+"-"+prefix, nil)
		}
		return create(c, variant, variant+"-"+prefix, map[string]string{v1alpha1.NetworksAnnotation: benchRequest})
	}
	variants := []string{variantNone, variantNoop, variantReplay, variantPodnet, variantPlain}
	for _, clients := range []int{1, 10, 50} {
		perRound := 100 * min(clients, 5)
		for _, v := range variants {
			parallel(t, 2*clients, clients, createVariant(v, fmt.Sprintf("c%d-warm", clients)))
		}
		before := scrapeFloor(t, h)
		took := map[string][]time.Duration{}
		for r := range rounds {
			// The order rotates, so no variant always follows another.
			for k := range variants {
				v := variants[(r+k)%len(variants)]
				took[v] = append(took[v], parallel(t, perRound, clients, createVariant(v, fmt.Sprintf("c%d-r%d", clients, r)))...)
			}
		}
		printFloor(clients, took, before, scrapeFloor(t, h))
	}
	verifyApproved(t, c, h, variantPodnet, fmt.Sprintf("%s-c50-r%d-0", variantPodnet, rounds-1))
	countAdmissions(t, h, c)
	fmt.Printf("BENCH webhook_floor_machine_loadavg_1m %s load\n", bench.LoadAverage())
}

// benchProfile offers networks data and mgmt to namespaces labelled
// tenant=<tenant>.
func benchProfile(name, tenant string) *v1alpha1.NetworkProfile {
	p := &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": tenant}},
			MaxInterfaces:     4,
		},
	}
	for i, n := range []string{"data", "mgmt"} {
		p.Spec.Networks = append(p.Spec.Networks, v1alpha1.Network{
			Name: n,
			Bridge: &v1alpha1.BridgeNetwork{
				Name: "pnbr-" + n,
				VLAN: &v1alpha1.VLANPolicy{Default: ptr.To[int32](100), Allowed: []string{"100-199"}},
			},
			MTU:  &v1alpha1.MTURange{Default: ptr.To[int32](1500), Max: ptr.To[int32](9000)},
			IPAM: &v1alpha1.IPAM{Pools: []string{fmt.Sprintf("192.168.%d.0/24", 100+i)}, AllowStatic: true},
		})
	}
	return p
}

// podnetPatch is the JSON patch podnet's webhook answers for the bench's
// pod.
func podnetPatch(t testing.TB, h *harness) []byte {
	t.Helper()
	raw, err := json.Marshal(pod(variantPodnet, "patch-source", map[string]string{v1alpha1.NetworksAnnotation: benchRequest}))
	if err != nil {
		t.Fatal(err)
	}
	resp := h.handler.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "patch-source", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: variantPodnet,
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
	}})
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("podnet's webhook answered %+v", resp.Result)
	}
	patch, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	return patch
}

// startNoopWebhook serves the floor: an HTTPS server set up as
// controller-runtime sets up podnet's (the same serving pair from the
// same CA, HTTP/2 offered, one listener) that reads only the request's
// UID and allows, at /noop with no patch and at /replay with the fixed
// patch given. It returns its URL.
func startNoopWebhook(t testing.TB, h *harness, patch []byte) string {
	t.Helper()
	wio := h.env.Env.WebhookInstallOptions
	cert, err := tls.LoadX509KeyPair(filepath.Join(wio.LocalServingCertDir, "tls.crt"), filepath.Join(wio.LocalServingCertDir, "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(wio.LocalServingHost, "0"),
		&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/noop", noopHandler(""))
	mux.Handle("/replay", noopHandler(base64.StdEncoding.EncodeToString(patch)))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("no-op webhook: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("no-op webhook: %v", err)
		}
	})
	return "https://" + ln.Addr().String()
}

// noopHandler answers an AdmissionReview: allowed, with the base64 JSON
// patch given, or none.
func noopHandler(patch string) http.HandlerFunc {
	extra := ""
	if patch != "" {
		extra = `,"patchType":"JSONPatch","patch":"` + patch + `"`
	}
	return func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true%s}}`, review.Request.UID, extra)
	}
}

// installNoopWebhook registers a webhook at url with everything of
// podnet's installed configuration (CA, matchConditions, failurePolicy,
// timeout, rules) but its name, URL and the namespaces it selects (those
// labelled <name>=true), and waits until the API server calls it for a
// pod in namespace ns.
func installNoopWebhook(t testing.TB, h *harness, name, url, ns string) {
	t.Helper()
	ctx := context.Background()
	installed := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := h.env.Client.Get(ctx, client.ObjectKey{Name: "podnet-webhook"}, installed); err != nil {
		t.Fatal(err)
	}
	wh := *installed.Webhooks[0].DeepCopy()
	wh.Name = name
	wh.ClientConfig.URL, wh.ClientConfig.Service = &url, nil
	wh.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{name: "true"}}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Webhooks:   []admissionregistrationv1.MutatingWebhook{wh},
	}
	if err := h.env.Client.Create(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// The API server picks the configuration up asynchronously.
	c := fastClient(t, h.env)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		if err := c.Create(ctx, pod(ns, fmt.Sprintf("probe-%d", i), map[string]string{v1alpha1.NetworksAnnotation: benchRequest})); err != nil {
			t.Fatal(err)
		}
		_, count := metricSumCount(t, apiserverScrape(t, h.env), "apiserver_admission_webhook_admission_duration_seconds", `name="`+name+`"`)
		if count > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server never called webhook %s", name)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// floorScrape is what the API server and podnet's webhook have measured
// so far: their histograms' sums and counts.
type floorScrape struct {
	podnetCall, noopCall, replayCall, decision [2]float64
}

func scrapeFloor(t testing.TB, h *harness) floorScrape {
	t.Helper()
	api := apiserverScrape(t, h.env)
	body, err := h.get(context.Background(), h.metricURL)
	if err != nil {
		t.Fatal(err)
	}
	var s floorScrape
	const call = "apiserver_admission_webhook_admission_duration_seconds"
	s.podnetCall[0], s.podnetCall[1] = metricSumCount(t, api, call, `name="pods.podnet.io"`)
	s.noopCall[0], s.noopCall[1] = metricSumCount(t, api, call, `name="`+noopWebhookName+`"`)
	s.replayCall[0], s.replayCall[1] = metricSumCount(t, api, call, `name="`+replayWebhookName+`"`)
	s.decision[0], s.decision[1] = metricSumCount(t, body, "podnet_webhook_decision_duration_seconds", `result="approved"`)
	return s
}

// meanSince is the mean of the observations between two scrapes.
func meanSince(before, after [2]float64) time.Duration {
	if after[1] == before[1] {
		return 0
	}
	return time.Duration((after[0] - before[0]) / (after[1] - before[1]) * float64(time.Second))
}

func printFloor(clients int, took map[string][]time.Duration, before, after floorScrape) {
	q := func(v string, p float64) time.Duration { return bench.Percentile(took[v], p) }
	for _, v := range []string{variantNone, variantNoop, variantReplay, variantPodnet, variantPlain} {
		fmt.Printf("BENCH webhook_floor_pod_create_p50_%s_%dclients %s ms\n", v, clients, ms(q(v, 0.50)))
		fmt.Printf("BENCH webhook_floor_pod_create_p99_%s_%dclients %s ms\n", v, clients, ms(q(v, 0.99)))
	}
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		podnet := float64(q(variantPodnet, p.q))
		fmt.Printf("BENCH webhook_floor_%s_podnet_over_noop_%dclients %.3f ratio\n", p.name, clients, podnet/float64(q(variantNoop, p.q)))
		fmt.Printf("BENCH webhook_floor_%s_podnet_over_none_%dclients %.3f ratio\n", p.name, clients, podnet/float64(q(variantNone, p.q)))
		fmt.Printf("BENCH webhook_floor_%s_podnet_over_replay_%dclients %.3f ratio\n", p.name, clients, podnet/float64(q(variantReplay, p.q)))
		fmt.Printf("BENCH webhook_floor_%s_plain_over_none_%dclients %.3f ratio\n", p.name, clients, float64(q(variantPlain, p.q))/float64(q(variantNone, p.q)))
	}
	// Where a difference goes: the API server's time per call of each
	// webhook against podnet's own time per decision.
	fmt.Printf("BENCH webhook_floor_call_mean_podnet_seen_by_apiserver_%dclients %s ms\n", clients, ms(meanSince(before.podnetCall, after.podnetCall)))
	fmt.Printf("BENCH webhook_floor_call_mean_noop_seen_by_apiserver_%dclients %s ms\n", clients, ms(meanSince(before.noopCall, after.noopCall)))
	fmt.Printf("BENCH webhook_floor_call_mean_replay_seen_by_apiserver_%dclients %s ms\n", clients, ms(meanSince(before.replayCall, after.replayCall)))
	fmt.Printf("BENCH webhook_floor_decision_mean_in_handler_%dclients %s ms\n", clients, ms(meanSince(before.decision, after.decision)))
}

// verifyApproved checks that a pod through the webhook really was approved.
func verifyApproved(t testing.TB, c client.Client, h *harness, ns, name string) {
	t.Helper()
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
		t.Fatal(err)
	}
	a, err := approval.VerifyPod(h.verifier, got)
	if err != nil {
		t.Fatalf("pod %s/%s not approved: %v", ns, name, err)
	}
	if len(a.Interfaces) != 2 {
		t.Fatalf("pod %s/%s approved with %d interfaces, want 2", ns, name, len(a.Interfaces))
	}
}

// countAdmissions starts podnet pods as a node's agent would see them
// through: created by a tenant, then their status annotation patched by
// the agent's service account; and plain pods in the opted-in namespace.
// It counts podnet's decisions per pod, on the webhook's side.
func countAdmissions(t testing.TB, h *harness, c client.Client) {
	t.Helper()
	const pods = 50
	ctx := context.Background()
	agent := h.agentClient(t)
	decisions := func() float64 {
		body, err := h.get(ctx, h.metricURL)
		if err != nil {
			t.Fatal(err)
		}
		_, n := metricSumCount(t, body, "podnet_webhook_decision_duration_seconds", "")
		return n
	}
	start := decisions()
	parallel(t, pods, 10, func(i int) error {
		p := pod(variantPodnet, fmt.Sprintf("started-%d", i), map[string]string{v1alpha1.NetworksAnnotation: benchRequest})
		if err := c.Create(ctx, p); err != nil {
			return err
		}
		status := fmt.Sprintf(`{"metadata":{"annotations":{%q:"[]"}}}`, v1alpha1.NetworkStatusAnnotation)
		return agent.Patch(ctx, p, client.RawPatch("application/merge-patch+json", []byte(status)))
	})
	started := decisions()
	parallel(t, pods, 10, create(c, variantPodnet, "plain-counted", nil))
	plain := decisions()
	fmt.Printf("BENCH webhook_admissions_per_podnet_pod_start %.2f admissions\n", (started-start)/pods)
	fmt.Printf("BENCH webhook_admissions_per_plain_pod %.2f admissions\n", (plain-started)/pods)
}

// create returns a function creating pod <prefix>-<i> in ns.
func create(c client.Client, ns, prefix string, annotations map[string]string) func(int) error {
	return func(i int) error {
		return c.Create(context.Background(), pod(ns, prefix+"-"+strconv.Itoa(i), annotations))
	}
}

// metricSumCount is the sum and count of a histogram's series whose
// labels contain match, summed over those series; zero when none.
func metricSumCount(t testing.TB, body, name, match string) (sum, count float64) {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		for suffix, into := range map[string]*float64{"_sum": &sum, "_count": &count} {
			rest, ok := strings.CutPrefix(line, name+suffix)
			if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') || !strings.Contains(rest, match) {
				continue
			}
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			*into += v
		}
	}
	return sum, count
}
