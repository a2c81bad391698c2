package webhook

import (
	"context"
	"testing"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// dropNetRawOp is the patch that gives a container without a security
// context one that drops NET_RAW.
func dropNetRawOp(path string) jsonpatch.JsonPatchOperation {
	return jsonpatch.NewOperation("add", path, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{policy.CapNetRaw}}})
}

// TestCreateDropsNetRaw: every container and init container of a pod that
// gets networks ends up dropping NET_RAW, whatever its security context
// held before, the tenant's own drops are kept, and a second pass over the
// patched pod changes nothing.
func TestCreateDropsNetRaw(t *testing.T) {
	f := newFixture(t)
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	nonRoot := true
	pod.Spec.Containers = []corev1.Container{
		{Name: "bare", Image: "app:1"},
		{Name: "context", Image: "app:1", SecurityContext: &corev1.SecurityContext{RunAsNonRoot: &nonRoot}},
		{Name: "caps", Image: "app:1", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}}},
		{Name: "drops", Image: "app:1", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"MKNOD"}}}},
		{Name: "all", Image: "app:1", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"all"}}}},
		{Name: "raw", Image: "app:1", SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"CAP_NET_RAW"}}}},
	}
	pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup:1"}}
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	out := applyPatch(t, req, resp)
	for _, c := range append(out.Spec.Containers, out.Spec.InitContainers...) {
		if !policy.DropsNetRaw(c.SecurityContext) {
			t.Errorf("container %s keeps NET_RAW: %+v", c.Name, c.SecurityContext)
		}
	}
	if got := out.Spec.Containers[1].SecurityContext.RunAsNonRoot; got == nil || !*got {
		t.Errorf("runAsNonRoot of container context lost: %+v", out.Spec.Containers[1].SecurityContext)
	}
	if got := out.Spec.Containers[2].SecurityContext.Capabilities.Add; len(got) != 1 || got[0] != "NET_BIND_SERVICE" {
		t.Errorf("added capabilities of container caps changed: %v", got)
	}
	if got := out.Spec.Containers[3].SecurityContext.Capabilities.Drop; len(got) != 2 || got[0] != "MKNOD" || got[1] != policy.CapNetRaw {
		t.Errorf("drops of container drops = %v, want [MKNOD NET_RAW]", got)
	}
	if out.Spec.InitContainers[0].Name != v1alpha1.WaitContainerName || out.Spec.InitContainers[1].Name != "setup" {
		t.Errorf("init containers %s, %s: the wait container goes first", out.Spec.InitContainers[0].Name, out.Spec.InitContainers[1].Name)
	}
	wantPatches(t, f.h.Handle(context.Background(), createRequest(t, out)), nil)
}

// TestRequestlessPodKeepsNetRaw: a pod that asks for no network is left as
// it is; only podnet pods lose NET_RAW.
func TestRequestlessPodKeepsNetRaw(t *testing.T) {
	f := newFixture(t)
	resp := f.h.Handle(context.Background(), createRequest(t, testPod(nil)))
	wantPatches(t, resp, nil)
}

// TestCreateKeepsNetRawWhereEveryNetworkAllowsIt: a pod keeps NET_RAW only
// when every network it gets allows raw sockets; one network that does
// not is enough to drop it.
func TestCreateKeepsNetRawWhereEveryNetworkAllowsIt(t *testing.T) {
	p := TelcoProfile()
	raw := p.Spec.Networks[0]
	raw.Name, raw.Bridge, raw.IPAM, raw.AllowRawSockets = "raw", &v1alpha1.BridgeNetwork{Name: "pnbr-raw"}, nil, true
	p.Spec.Networks = append(p.Spec.Networks, raw)
	f := newFixture(t, testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}), p)
	for request, keeps := range map[string]bool{"raw": true, "raw, raw@net2": true, "raw, data": false, "data": false} {
		req := createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: request}))
		resp := f.h.Handle(context.Background(), req)
		if !resp.Allowed {
			t.Fatalf("%s: denied: %v", request, resp.Result)
		}
		if got := !policy.DropsNetRaw(applyPatch(t, req, resp).Spec.Containers[0].SecurityContext); got != keeps {
			t.Errorf("request %q: keeps NET_RAW = %v, want %v", request, got, keeps)
		}
	}
}
