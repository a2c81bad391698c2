package webhook

import (
	"context"
	"net/http"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// FuzzHandleRequestAnnotation: whatever a tenant writes in the request and
// wait annotations, the webhook answers with an approval or a denial,
// never a server error or a panic, and an approval is stable.
func FuzzHandleRequestAnnotation(f *testing.F) {
	for _, seed := range []string{"data", "data@net2, data", `[{"name":"data","vlan":120,"mtu":9000}]`, `[{"name":`, "", " , ,", "ns/data@eth0", `[{"interface":"eth0","mtu":1400}]`} {
		f.Add(seed, "true")
	}
	f.Add("data", "maybe")
	fx := newFixture(&testing.T{})
	f.Fuzz(func(t *testing.T, request, wait string) {
		pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: request, v1alpha1.WaitAnnotation: wait})
		req := createRequest(t, pod)
		resp := fx.h.Handle(context.Background(), req)
		if !resp.Allowed {
			if resp.Result == nil || resp.Result.Code != http.StatusForbidden || resp.Result.Message == "" {
				t.Fatalf("request %q wait %q: not a denial: %+v", request, wait, resp.Result)
			}
			return
		}
		again := fx.h.Handle(context.Background(), createRequest(t, applyPatch(t, req, resp)))
		if !again.Allowed || len(again.Patches) != 0 {
			t.Fatalf("request %q: second pass changed %v", request, again.Patches)
		}
	})
}

// FuzzHandleRawObject: a request body that is not a pod is a denial.
func FuzzHandleRawObject(f *testing.F) {
	f.Add([]byte(`{"metadata":{"annotations":{"podnet.io/networks":"data"}}}`))
	f.Add([]byte(`{"metadata":{"namespace":"t1","annotations":{"podnet.io/networks":"data"}},"spec":{"initContainers":[{"name":"podnet-wait"}]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"spec":{"readinessGates":null}}`))
	fx := newFixture(&testing.T{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		req := createRequest(t, testPod(nil))
		req.Object.Raw = raw
		resp := fx.h.Handle(context.Background(), req)
		if !resp.Allowed && (resp.Result == nil || resp.Result.Code != http.StatusForbidden) {
			t.Fatalf("%q: not a denial: %+v", raw, resp.Result)
		}
	})
}

// FuzzHandleMultusRequest: whatever a tenant writes in Multus' request
// annotation, next to podnet's or alone, a webhook that reads it answers
// with an approval or a denial, never a server error or a panic, and an
// approval is stable.
func FuzzHandleMultusRequest(f *testing.F) {
	for _, seed := range []struct {
		multus, own string
		hasOwn      bool
	}{{"data", "", false}, {"data", "data", true}, {"data", "data@dp0", true}, {"", "", false}, {`[{"name":`, "", false}, {"t1/data@dp0", "", false}, {"other/data", "", false}} {
		f.Add(seed.multus, seed.own, seed.hasOwn)
	}
	fx := newFixture(&testing.T{})
	fx.h.MultusRequests = true
	f.Fuzz(func(t *testing.T, multus, own string, hasOwn bool) {
		annotations := map[string]string{v1alpha1.MultusNetworksAnnotation: multus}
		if hasOwn {
			annotations[v1alpha1.NetworksAnnotation] = own
		}
		req := createRequest(t, testPod(annotations))
		resp := fx.h.Handle(context.Background(), req)
		if !resp.Allowed {
			if resp.Result == nil || resp.Result.Code != http.StatusForbidden || resp.Result.Message == "" {
				t.Fatalf("multus %q own %q (%v): not a denial: %+v", multus, own, hasOwn, resp.Result)
			}
			return
		}
		again := fx.h.Handle(context.Background(), createRequest(t, applyPatch(t, req, resp)))
		if !again.Allowed || len(again.Patches) != 0 {
			t.Fatalf("multus %q own %q (%v): second pass changed %v", multus, own, hasOwn, again.Patches)
		}
	})
}
