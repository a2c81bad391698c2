package webhook

import (
	"context"
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
