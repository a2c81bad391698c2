//go:build bench

package webhook_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	gomodulesjsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/webhook"
)

// The floor bench's variants: how a pod CREATE reaches the API server's
// storage. Each has a namespace of its own, named after it.
const (
	variantNone   = "none"   // no webhook is called
	variantNoop   = "noop"   // a minimal webhook that allows and changes nothing
	variantPodnet = "podnet" // podnet's webhook, approving two networks
	variantPlain  = "plain"  // opted in to podnet, but the pod asks for nothing
	// oneop is the no-op webhook answering one op that adds one small
	// annotation: what the API server pays for any mutation at all.
	variantOneOp = "oneop"
	// fine is the no-op webhook answering podnet's change with one op per
	// value that differs, as a JSON diff of the pod before and after it
	// makes it (controller-runtime's PatchResponseFromRaw answers so).
	variantFine = "fine"
	// merged is the no-op webhook answering podnet's change with one op
	// per field it touches (whole annotations map, whole container
	// lists): the same change as replay in the fewest ops that stay below
	// metadata and spec.
	variantMerged = "merged"
	// replay is the no-op webhook answering with the patch podnet's
	// webhook answers: what the API server pays to apply podnet's change,
	// whoever decides it.
	variantReplay = "replay"
	// approval is the no-op webhook answering only the ops of podnet's
	// patch that set its two annotations (the approval and its
	// signature): with replay, it splits what podnet's change costs the
	// API server into the approval's bytes and the spec's changes (the
	// readiness gate, NET_RAW dropped, the wait container).
	variantApproval = "approval"
)

// floorVariants are the variants in the order they are printed.
var floorVariants = []string{variantNone, variantNoop, variantOneOp, variantApproval, variantFine, variantMerged, variantReplay, variantPodnet, variantPlain}

// answering are the variants served by the bench's own webhook, each
// answering a fixed patch.
var answering = []string{variantNoop, variantOneOp, variantApproval, variantFine, variantMerged, variantReplay}

// benchWebhookName names the bench's webhook of a variant, in its
// configuration and in the API server's metrics.
func benchWebhookName(variant string) string { return variant + ".bench.podnet.io" }

// podnetWebhookName is podnet's webhook in the generated configuration.
const podnetWebhookName = "pods.podnet.io"

// benchRequest is a realistic request: two networks, one with a VLAN.
const benchRequest = `[{"name":"data","vlan":120},{"name":"mgmt"}]`

// TestBenchPodCreateLatency measures, on one API server and in one run,
// pod CREATE without a webhook, through a no-op webhook (the floor every
// mutating webhook pays: the API server's call, TLS, JSON), and through
// podnet's webhook deciding a two-network request among 100 profiles;
// through the no-op webhook answering one small op, podnet's change as a
// JSON diff and in one op per field, podnet's own patch and its
// annotation ops alone (what the API server pays for any mutation, per op
// and per byte, apart from podnet's decision); and plain pods in an
// opted-in namespace, which matchConditions keep from any webhook. Each
// concurrency runs rounds that alternate the variants, so that load on
// the shared machine hits all of them alike, and meters each variant by
// the API server's, etcd's and its own process's CPU time as well as by
// latency.
func TestBenchPodCreateLatency(t *testing.T) {
	rounds := bench.Size(6, 1)
	concurrency := bench.Levels([]int{1, 10, 50}, []int{1, 10}, []int{2})
	last := concurrency[len(concurrency)-1]
	// Its own API server: it installs webhook configurations of its own and meters the server's CPU time.
	h := startHarness(t)
	ctx := context.Background()
	c := fastClient(t, h.env)
	h.createNamespace(t, variantNone, map[string]string{"tenant": "telco"})
	for _, v := range answering {
		h.createNamespace(t, v, map[string]string{benchWebhookName(v): "true", "tenant": "telco"})
	}
	h.createNamespace(t, variantPodnet, map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"})
	for i := range 99 {
		p := webhook.BenchProfile(fmt.Sprintf("other-%02d", i), fmt.Sprintf("other-%d", i))
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	h.createProfile(t, webhook.BenchProfile("telco", "telco"))
	patches := floorPatches(t, h)
	base := startNoopWebhook(t, h, patches)
	for _, v := range answering {
		installNoopWebhook(t, h, v, base+"/"+v)
	}
	printPatches(t, patches)

	createVariant := func(variant, prefix string) func(int) error {
		if variant == variantPlain {
			return create(c, variantPodnet, variant+"-"+prefix, nil)
		}
		return create(c, variant, variant+"-"+prefix, map[string]string{v1alpha1.NetworksAnnotation: benchRequest})
	}
	servers := findServers(t, h)
	var overFloor []floorRatio
	for _, clients := range concurrency {
		perRound := bench.Size(100, 2) * min(clients, 5)
		for _, v := range floorVariants {
			parallel(t, 2*clients, clients, createVariant(v, fmt.Sprintf("c%d-warm", clients)))
		}
		before := scrapeFloor(t, h)
		took := map[string][]time.Duration{}
		cpu := map[string]serverCPU{}
		for r := range rounds {
			// The order rotates, so no variant always follows another.
			for k := range floorVariants {
				v := floorVariants[(r+k)%len(floorVariants)]
				start := servers.read(t)
				took[v] = append(took[v], parallel(t, perRound, clients, createVariant(v, fmt.Sprintf("c%d-r%d", clients, r)))...)
				cpu[v] = cpu[v].add(servers.read(t).sub(start))
			}
		}
		printFloor(clients, took, before, scrapeFloor(t, h))
		printServerCPU(clients, cpu, rounds*perRound)
		overFloor = append(overFloor, floorRatioOf(clients, took))
	}
	printOverFloor(overFloor)
	verifyApproved(t, c, h, variantPodnet, fmt.Sprintf("%s-c%d-r%d-0", variantPodnet, last, rounds-1))
	sameStoredChange(t, c, fmt.Sprintf("c%d-r%d-0", last, rounds-1), variantFine, variantMerged, variantReplay, variantPodnet)
	countAdmissions(t, h, c)
	countMutatingPasses(t, h, createVariant)
	fmt.Printf("BENCH webhook_floor_machine_loadavg_1m %s load\n", bench.LoadAverage())
}

// podnetPatch is the JSON patch podnet's webhook answers for the bench's
// pod, and that pod's JSON.
func podnetPatch(t testing.TB, h *harness) (patch, doc []byte) {
	t.Helper()
	doc, err := json.Marshal(pod(variantPodnet, "patch-source", map[string]string{v1alpha1.NetworksAnnotation: benchRequest}))
	if err != nil {
		t.Fatal(err)
	}
	resp := h.handler.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "patch-source", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: variantPodnet,
		Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: doc},
	}})
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("podnet's webhook answered %+v", resp.Result)
	}
	if patch, err = json.Marshal(resp.Patches); err != nil {
		t.Fatal(err)
	}
	return patch, doc
}

// floorPatches are the patches the bench's webhook answers, by variant,
// and podnet's own.
func floorPatches(t testing.TB, h *harness) map[string][]byte {
	t.Helper()
	podnet, doc := podnetPatch(t, h)
	oneOp, err := json.Marshal([]map[string]string{{"op": "add", "path": "/metadata/annotations/bench.podnet.io~1mutated", "value": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		variantNoop:     nil,
		variantOneOp:    oneOp,
		variantApproval: annotationOps(t, podnet),
		variantFine:     finePatch(t, doc, podnet),
		variantMerged:   mergedPatch(t, doc, podnet),
		variantReplay:   podnet,
		variantPodnet:   podnet,
	}
}

// annotationOps is the ops of patch below /metadata/annotations/.
func annotationOps(t testing.TB, patch []byte) []byte {
	t.Helper()
	var ops []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(patch, &raw); err != nil {
		t.Fatal(err)
	}
	var kept []json.RawMessage
	for i, op := range ops {
		if strings.HasPrefix(op.Path, "/metadata/annotations/") {
			kept = append(kept, raw[i])
		}
	}
	if len(kept) != 2 {
		t.Fatalf("podnet's patch %s has %d annotation ops, want 2", patch, len(kept))
	}
	out, err := json.Marshal(kept)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// finePatch is the change patch makes to doc as a JSON diff: one op per
// value that differs, whole values only where they are new.
func finePatch(t testing.TB, doc, patch []byte) []byte {
	t.Helper()
	ops, err := gomodulesjsonpatch.CreatePatch(doc, applyPatch(t, doc, patch))
	if err != nil {
		t.Fatal(err)
	}
	fine, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, doc, patch, fine)
	return fine
}

// applyPatch applies a JSON patch to doc.
func applyPatch(t testing.TB, doc, patch []byte) []byte {
	t.Helper()
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("apply %s: %v", patch, err)
	}
	return out
}

// sameResult fails unless patches a and b make the same document of doc:
// a variant that made another change would measure another change.
func sameResult(t testing.TB, doc, a, b []byte) {
	t.Helper()
	if x, y := applyPatch(t, doc, a), applyPatch(t, doc, b); !jsonpatch.Equal(x, y) {
		t.Fatalf("patch %s makes %s, patch %s makes %s", a, x, b, y)
	}
}

// mergedPatch is the change patch makes to doc in the fewest ops that
// stay below metadata and spec: one add, replace or remove per field of
// either that differs (the whole annotations map, the whole container
// list). Ops on /metadata or /spec themselves would overwrite what the
// API server put there before admission (managed fields, defaults).
func mergedPatch(t testing.TB, doc, patch []byte) []byte {
	t.Helper()
	var from, to map[string]map[string]any
	if err := json.Unmarshal(doc, &from); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(applyPatch(t, doc, patch), &to); err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	for _, top := range []string{"metadata", "spec"} {
		fields := slices.Sorted(maps.Keys(to[top]))
		for _, k := range slices.Sorted(maps.Keys(from[top])) {
			if _, ok := to[top][k]; !ok {
				fields = append(fields, k)
			}
		}
		for _, k := range fields {
			was, had := from[top][k]
			now, has := to[top][k]
			path := "/" + top + "/" + k
			switch {
			case !has:
				ops = append(ops, map[string]any{"op": "remove", "path": path})
			case !had:
				ops = append(ops, map[string]any{"op": "add", "path": path, "value": now})
			case !reflect.DeepEqual(was, now):
				ops = append(ops, map[string]any{"op": "replace", "path": path, "value": now})
			}
		}
	}
	merged, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, doc, patch, merged)
	return merged
}

// printPatches prints each variant's patch: its size and op count.
func printPatches(t testing.TB, patches map[string][]byte) {
	t.Helper()
	for _, v := range []string{variantNoop, variantOneOp, variantApproval, variantFine, variantMerged, variantReplay, variantPodnet} {
		var ops []json.RawMessage
		if patches[v] != nil {
			if err := json.Unmarshal(patches[v], &ops); err != nil {
				t.Fatalf("patch of %s: %v", v, err)
			}
		}
		fmt.Printf("BENCH webhook_floor_patch_bytes_%s %d bytes\n", v, len(patches[v]))
		fmt.Printf("BENCH webhook_floor_patch_ops_%s %d ops\n", v, len(ops))
	}
}

// startNoopWebhook serves the floor: an HTTPS server set up as
// controller-runtime sets up podnet's (the same serving pair from the
// same CA, HTTP/2 offered, one listener) that reads only the request's
// UID and allows, at /<variant> with that variant's fixed patch (none for
// the no-op). It returns its URL.
func startNoopWebhook(t testing.TB, h *harness, patches map[string][]byte) string {
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
	for _, v := range answering {
		mux.Handle("/"+v, noopHandler(base64.StdEncoding.EncodeToString(patches[v])))
	}
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

// installNoopWebhook registers the bench's webhook of a variant at address
// with everything of podnet's installed configuration (CA,
// matchConditions, failurePolicy, timeout, rules) but its name, URL and
// the namespaces it selects (those labelled <name>=true), and waits until
// the API server calls it for a pod in the variant's namespace.
func installNoopWebhook(t testing.TB, h *harness, variant, address string) {
	t.Helper()
	ctx := context.Background()
	installed := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := h.env.Client.Get(ctx, client.ObjectKey{Name: "podnet-webhook"}, installed); err != nil {
		t.Fatal(err)
	}
	name := benchWebhookName(variant)
	wh := *installed.Webhooks[0].DeepCopy()
	wh.Name = name
	wh.ClientConfig.URL, wh.ClientConfig.Service = &address, nil
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
		if err := c.Create(ctx, pod(variant, fmt.Sprintf("probe-%d", i), map[string]string{v1alpha1.NetworksAnnotation: benchRequest})); err != nil {
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
// so far: their histograms' sums and counts. call holds the API server's
// timing of each variant's webhook call, podnet's under variantPodnet.
type floorScrape struct {
	call     map[string][2]float64
	decision [2]float64
}

func scrapeFloor(t testing.TB, h *harness) floorScrape {
	t.Helper()
	api := apiserverScrape(t, h.env)
	body, err := h.get(context.Background(), h.metricURL)
	if err != nil {
		t.Fatal(err)
	}
	s := floorScrape{call: map[string][2]float64{}}
	const call = "apiserver_admission_webhook_admission_duration_seconds"
	names := map[string]string{variantPodnet: podnetWebhookName}
	for _, v := range answering {
		names[v] = benchWebhookName(v)
	}
	for v, name := range names {
		sum, count := metricSumCount(t, api, call, `name="`+name+`"`)
		s.call[v] = [2]float64{sum, count}
	}
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
	for _, v := range floorVariants {
		fmt.Printf("BENCH webhook_floor_pod_create_p50_%s_%dclients %s ms\n", v, clients, ms(q(v, 0.50)))
		fmt.Printf("BENCH webhook_floor_pod_create_p99_%s_%dclients %s ms\n", v, clients, ms(q(v, 0.99)))
	}
	ratio := func(p string, q float64, of, over string) {
		fmt.Printf("BENCH webhook_floor_%s_%s_over_%s_%dclients %.3f ratio\n", p, of, over, clients,
			float64(bench.Percentile(took[of], q))/float64(bench.Percentile(took[over], q)))
	}
	for _, p := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		ratio(p.name, p.q, variantPodnet, variantNoop)
		ratio(p.name, p.q, variantPodnet, variantNone)
		ratio(p.name, p.q, variantPodnet, variantReplay)
		// The split of a mutation's cost: any mutation over none; the
		// same change in fewer ops; podnet's ops.
		ratio(p.name, p.q, variantOneOp, variantNoop)
		ratio(p.name, p.q, variantApproval, variantOneOp)
		ratio(p.name, p.q, variantReplay, variantApproval)
		ratio(p.name, p.q, variantFine, variantNoop)
		ratio(p.name, p.q, variantMerged, variantNoop)
		ratio(p.name, p.q, variantReplay, variantNoop)
		ratio(p.name, p.q, variantReplay, variantMerged)
		ratio(p.name, p.q, variantReplay, variantFine)
		ratio(p.name, p.q, variantPodnet, variantOneOp)
		ratio(p.name, p.q, variantPlain, variantNone)
	}
	// Where a difference goes: the API server's time per call of each
	// webhook (the call and applying its patch) against podnet's own time
	// per decision.
	for _, v := range append(slices.Clone(answering), variantPodnet) {
		fmt.Printf("BENCH webhook_floor_call_mean_%s_seen_by_apiserver_%dclients %s ms\n", v, clients, ms(meanSince(before.call[v], after.call[v])))
	}
	fmt.Printf("BENCH webhook_floor_decision_mean_in_handler_%dclients %s ms\n", clients, ms(meanSince(before.decision, after.decision)))
}

// floorRatio is podnet's pod CREATE latency over the mutation floor's
// (the no-op webhook answering one small op) at one concurrency.
type floorRatio struct {
	clients  int
	p50, p99 float64
}

func floorRatioOf(clients int, took map[string][]time.Duration) floorRatio {
	over := func(q float64) float64 {
		return float64(bench.Percentile(took[variantPodnet], q)) / float64(bench.Percentile(took[variantOneOp], q))
	}
	return floorRatio{clients: clients, p50: over(0.50), p99: over(0.99)}
}

// printOverFloor prints podnet over the mutation floor at every
// concurrency together, after the run: the figure the webhook's own cost
// is judged by, since any webhook that changes a pod pays the floor.
func printOverFloor(ratios []floorRatio) {
	for _, r := range ratios {
		fmt.Printf("BENCH webhook_podnet_over_mutation_floor_p50_%dclients %.3f ratio\n", r.clients, r.p50)
		fmt.Printf("BENCH webhook_podnet_over_mutation_floor_p99_%dclients %.3f ratio\n", r.clients, r.p99)
	}
}

// sameStoredChange checks that the pods named <variant>-<suffix> of the
// variants given were stored with the same annotations and spec but for
// the approval (issued for each pod): the variants measure one change.
func sameStoredChange(t testing.TB, c client.Client, suffix string, variants ...string) {
	t.Helper()
	var first *corev1.Pod
	for _, v := range variants {
		got := &corev1.Pod{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: v, Name: v + "-" + suffix}, got); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{v1alpha1.ApprovedAnnotation, v1alpha1.ApprovedSignatureAnnotation} {
			if got.Annotations[k] == "" {
				t.Fatalf("pod %s/%s has no annotation %s", got.Namespace, got.Name, k)
			}
			delete(got.Annotations, k)
		}
		if first == nil {
			first = got
			continue
		}
		if !apiequality.Semantic.DeepEqual(first.Annotations, got.Annotations) || !apiequality.Semantic.DeepEqual(first.Spec, got.Spec) {
			t.Fatalf("pod %s/%s stored %v %+v, pod %s/%s %v %+v", first.Namespace, first.Name, first.Annotations, first.Spec,
				got.Namespace, got.Name, got.Annotations, got.Spec)
		}
	}
}

// servers are the API server's and etcd's processes, found by the
// addresses the bench reaches them at.
type servers struct{ apiserver, etcd int }

// serverCPU is CPU time spent by the API server, by etcd and by the
// bench's own process, which holds the clients, the bench's webhook and
// podnet's: between variants, its difference is what one webhook costs
// over another, since every variant's clients are the same.
type serverCPU struct{ apiserver, etcd, bench time.Duration }

func (c serverCPU) add(d serverCPU) serverCPU {
	return serverCPU{c.apiserver + d.apiserver, c.etcd + d.etcd, c.bench + d.bench}
}

func (c serverCPU) sub(d serverCPU) serverCPU {
	return serverCPU{c.apiserver - d.apiserver, c.etcd - d.etcd, c.bench - d.bench}
}

// findServers finds the envtest API server by its secure port and etcd
// by the address the API server stores at.
func findServers(t testing.TB, h *harness) servers {
	t.Helper()
	u, err := url.Parse(h.env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	args := map[int][]string{}
	var s servers
	etcdURL := ""
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil || len(raw) == 0 {
			continue // gone, or a kernel thread
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			t.Fatal(err)
		}
		args[pid] = strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if filepath.Base(args[pid][0]) == "kube-apiserver" && slices.Contains(args[pid], "--secure-port="+u.Port()) {
			s.apiserver = pid
			for _, a := range args[pid] {
				if v, ok := strings.CutPrefix(a, "--etcd-servers="); ok {
					etcdURL = v
				}
			}
		}
	}
	for pid, a := range args {
		if filepath.Base(a[0]) == "etcd" && etcdURL != "" && slices.Contains(a, "--listen-client-urls="+etcdURL) {
			s.etcd = pid
		}
	}
	if s.apiserver == 0 || s.etcd == 0 {
		t.Fatalf("found API server pid %d (port %s), etcd pid %d (%s)", s.apiserver, u.Port(), s.etcd, etcdURL)
	}
	return s
}

// read returns the CPU time both servers and the bench's process have
// spent so far.
func (s servers) read(t testing.TB) serverCPU {
	t.Helper()
	return serverCPU{apiserver: processCPU(t, s.apiserver), etcd: processCPU(t, s.etcd), bench: processCPU(t, os.Getpid())}
}

// processCPU is the time a process's threads have run on a CPU, in
// nanoseconds from the scheduler (/proc/<pid>/task/*/schedstat), where
// /proc/<pid>/stat counts 10 ms ticks.
func processCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(stats) == 0 {
		t.Fatalf("schedstat of pid %d: %v", pid, err)
	}
	var sum time.Duration
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue // a thread that exited
		}
		ns, err := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// printServerCPU prints the API server's and etcd's CPU time per pod
// created, by variant: what each variant costs the servers whatever the
// load of the machine does to latency.
func printServerCPU(clients int, cpu map[string]serverCPU, pods int) {
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(pods) }
	for _, v := range floorVariants {
		fmt.Printf("BENCH webhook_floor_apiserver_cpu_per_pod_%s_%dclients %.0f us\n", v, clients, per(cpu[v].apiserver))
		fmt.Printf("BENCH webhook_floor_etcd_cpu_per_pod_%s_%dclients %.0f us\n", v, clients, per(cpu[v].etcd))
		fmt.Printf("BENCH webhook_floor_bench_process_cpu_per_pod_%s_%dclients %.0f us\n", v, clients, per(cpu[v].bench))
		fmt.Printf("BENCH webhook_floor_all_cpu_per_pod_%s_%dclients %.0f us\n", v, clients, per(cpu[v].apiserver+cpu[v].etcd+cpu[v].bench))
	}
	// What podnet's webhook costs the bench's process over the bench's
	// webhook answering the same patch: its decision, signing and
	// answering, apart from the clients both share.
	fmt.Printf("BENCH webhook_floor_podnet_webhook_cpu_over_replay_per_pod_%dclients %.0f us\n", clients, per(cpu[variantPodnet].bench-cpu[variantReplay].bench))
	for _, v := range []string{variantOneOp, variantApproval, variantFine, variantMerged, variantReplay, variantPodnet} {
		fmt.Printf("BENCH webhook_floor_apiserver_cpu_%s_over_noop_%dclients %.3f ratio\n", v, clients,
			float64(cpu[v].apiserver)/float64(cpu[variantNoop].apiserver))
	}
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

// countMutatingPasses counts, for each variant, how many times the API
// server runs its webhook admission plugin per pod CREATE: once, and once
// more when a webhook changed the pod, since any change makes the API
// server run the whole mutating admission chain again
// (k8s.io/apiserver/pkg/admission/reinvocation.go), in-tree plugins and
// every webhook's selectors and matchConditions included, even for
// webhooks that are not called again (reinvocationPolicy Never).
func countMutatingPasses(t testing.TB, h *harness, createVariant func(variant, prefix string) func(int) error) {
	t.Helper()
	const pods = 20
	passes := func() float64 {
		_, n := metricSumCount(t, apiserverScrape(t, h.env), "apiserver_admission_controller_admission_duration_seconds",
			`name="MutatingAdmissionWebhook",operation="CREATE"`)
		return n
	}
	for _, v := range floorVariants {
		before := passes()
		parallel(t, pods, 1, createVariant(v, "passes"))
		fmt.Printf("BENCH webhook_floor_mutating_admission_passes_per_pod_%s %.2f passes\n", v, (passes()-before)/pods)
	}
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
