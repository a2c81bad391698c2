package webhook

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

// TestMultusRequestIsReadAsPodnetRequest: with MultusRequests on, a pod
// written for Multus gets podnet's annotation (a copy of Multus') and an
// approval the agent accepts; a second pass changes nothing.
func TestMultusRequestIsReadAsPodnetRequest(t *testing.T) {
	f := newFixture(t)
	f.h.MultusRequests = true
	pod := testPod(map[string]string{v1alpha1.MultusNetworksAnnotation: "data, t1/data@dp0"})
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	out := applyPatch(t, req, resp)
	if got := out.Annotations[v1alpha1.NetworksAnnotation]; got != "data, t1/data@dp0" {
		t.Fatalf("%s = %q, want a copy of Multus' annotation", v1alpha1.NetworksAnnotation, got)
	}
	a, err := approval.VerifyPod(f.verifier(), created(out))
	if err != nil {
		t.Fatalf("agent would refuse the approval: %v", err)
	}
	if len(a.Interfaces) != 2 || a.Interfaces[0].Interface != "net1" || a.Interfaces[1].Interface != "dp0" {
		t.Fatalf("approval interfaces %+v, want net1 and dp0 as Multus names them", a.Interfaces)
	}
	wantPatches(t, f.h.Handle(context.Background(), createRequest(t, out)), nil)
	// An UPDATE that leaves both annotations equal keeps the approval.
	wantPatches(t, f.h.Handle(context.Background(), updateRequest(t, out, out)), nil)
}

func TestMultusRequestIgnoredWhenOff(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.MultusNetworksAnnotation: "data"})
	wantPatches(t, f.h.Handle(context.Background(), createRequest(t, pod)), nil)
}

func TestMultusRequestRefusals(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        []string
	}{
		"both annotations, different": {
			map[string]string{v1alpha1.MultusNetworksAnnotation: "data", v1alpha1.NetworksAnnotation: "data@dp0"},
			[]string{v1alpha1.MultusNetworksAnnotation, v1alpha1.NetworksAnnotation, "differ", "keep one"},
		},
		"another namespace": {
			map[string]string{v1alpha1.MultusNetworksAnnotation: "other/data"},
			[]string{"request read from " + v1alpha1.MultusNetworksAnnotation, `"other"`, "pod's own namespace"},
		},
		"a Multus key podnet does not honour": {
			map[string]string{v1alpha1.MultusNetworksAnnotation: `[{"name":"data","cni-args":{"a":"b"}}]`},
			[]string{"request read from " + v1alpha1.MultusNetworksAnnotation, "cni-args", "never passes raw configuration"},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.h.MultusRequests = true
			wantDenied(t, f.h.Handle(context.Background(), createRequest(t, testPod(c.annotations))), c.want...)
		})
	}
}

// TestTranslateMultus: which pods' request is read from Multus'
// annotation, and which are refused for carrying two.
func TestTranslateMultus(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		request     string
		copied      bool
		denial      []string
	}{
		{"no annotations", nil, "", false, nil},
		{"podnet's only", map[string]string{v1alpha1.NetworksAnnotation: "data"}, "", false, nil},
		{"Multus' only", map[string]string{v1alpha1.MultusNetworksAnnotation: "data, t1/data@dp0"}, "data, t1/data@dp0", true, nil},
		{"Multus' only, blank", map[string]string{v1alpha1.MultusNetworksAnnotation: ""}, "", true, nil},
		{"both, equal (after the copy)", map[string]string{v1alpha1.MultusNetworksAnnotation: "data", v1alpha1.NetworksAnnotation: "data"}, "", false, nil},
		{"both, different", map[string]string{v1alpha1.MultusNetworksAnnotation: "data", v1alpha1.NetworksAnnotation: "data@dp0"}, "", false,
			[]string{"t1/p", v1alpha1.MultusNetworksAnnotation, v1alpha1.NetworksAnnotation, "differ", "keep one"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pod := testPod(c.annotations)
			request, copied, err := translateMultus(pod)
			if request != c.request || copied != c.copied || (err != nil) != (c.denial != nil) {
				t.Fatalf("translateMultus = %q, %v, %v; want %q, %v, denied %v", request, copied, err, c.request, c.copied, c.denial != nil)
			}
			for _, s := range c.denial {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("denial %q does not mention %q", err, s)
				}
			}
			if !reflect.DeepEqual(pod.Annotations, c.annotations) {
				t.Errorf("annotations changed to %v", pod.Annotations)
			}
		})
	}
}

// TestMultusRequestDecodedOnce: a pod written for Multus costs its
// admission no more allocations than the same pod written for podnet
// (the copy's patch operation aside): it is decoded once, never turned
// back into JSON to be decoded again.
func TestMultusRequestDecodedOnce(t *testing.T) {
	f := newFixture(t)
	f.h.MultusRequests = true
	allocs := func(key string) float64 {
		req := createRequest(t, testPod(map[string]string{key: "data"}))
		if resp := f.h.Handle(context.Background(), req); !resp.Allowed {
			t.Fatalf("%s: denied: %v", key, resp.Result)
		}
		return testing.AllocsPerRun(20, func() { f.h.Handle(context.Background(), req) })
	}
	own, multus := allocs(v1alpha1.NetworksAnnotation), allocs(v1alpha1.MultusNetworksAnnotation)
	t.Logf("allocations per admission: %.0f for %s, %.0f for %s", own, v1alpha1.NetworksAnnotation, multus, v1alpha1.MultusNetworksAnnotation)
	if multus > own+10 {
		t.Errorf("a Multus request costs %.0f allocations, the same request under %s %.0f", multus, v1alpha1.NetworksAnnotation, own)
	}
}
