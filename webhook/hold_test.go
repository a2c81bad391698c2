package webhook

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

const requiredPlugins = v1alpha1.NRIRequiredPluginsAnnotation

// TestCreateNRIAnnotatesAndAddsNoWaitContainer: held by NRI, a pod with
// networks gets podnet's required-plugins annotation, the readiness gate
// and no init container; a second pass over the result changes nothing;
// a pod that asks for no network gets no annotation.
func TestCreateNRIAnnotatesAndAddsNoWaitContainer(t *testing.T) {
	f := newFixture(t)
	f.h.Hold = v1alpha1.HoldNRI
	pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	out := applyPatch(t, req, resp)
	if got := out.Annotations[requiredPlugins]; got != `["podnet"]` {
		t.Errorf("%s = %q, want [\"podnet\"]; annotations %v", requiredPlugins, got, out.Annotations)
	}
	if len(out.Spec.InitContainers) != 0 {
		t.Errorf("init containers %v, want none", out.Spec.InitContainers)
	}
	if g := out.Spec.ReadinessGates; len(g) != 1 || g[0].ConditionType != v1alpha1.NetworksReadyCondition {
		t.Errorf("readiness gates %v", g)
	}
	again := createRequest(t, out)
	wantPatches(t, f.h.Handle(context.Background(), again), nil)

	// Asked for, the wait container comes too; the annotation stays.
	pod = testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.WaitAnnotation: "true"})
	out = applyPatch(t, createRequest(t, pod), f.h.Handle(context.Background(), createRequest(t, pod)))
	if len(out.Spec.InitContainers) != 1 || out.Annotations[requiredPlugins] != v1alpha1.NRIRequiredPluginsValue {
		t.Errorf("with %s=true: init containers %v, annotations %v", v1alpha1.WaitAnnotation, out.Spec.InitContainers, out.Annotations)
	}

	// Nothing to hold: no network asked for.
	plain := testPod(map[string]string{v1alpha1.WaitAnnotation: "false"})
	out = applyPatch(t, createRequest(t, plain), f.h.Handle(context.Background(), createRequest(t, plain)))
	if _, ok := out.Annotations[requiredPlugins]; ok {
		t.Errorf("pod without networks annotated: %v", out.Annotations)
	}
}

// TestCreateOtherModesAddNoRequiredPlugins: only nri mode writes the
// annotation.
func TestCreateOtherModesAddNoRequiredPlugins(t *testing.T) {
	for _, mode := range []v1alpha1.HoldMode{"", v1alpha1.HoldWaitInitContainer, v1alpha1.HoldAttachAtSandboxSetup} {
		f := newFixture(t)
		f.h.Hold = mode
		pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data"})
		out := applyPatch(t, createRequest(t, pod), f.h.Handle(context.Background(), createRequest(t, pod)))
		if _, ok := out.Annotations[requiredPlugins]; ok {
			t.Errorf("mode %q: annotated %v", mode, out.Annotations)
		}
		if wait := len(out.Spec.InitContainers) == 1; wait != (mode != v1alpha1.HoldAttachAtSandboxSetup) {
			t.Errorf("mode %q: init containers %v", mode, out.Spec.InitContainers)
		}
	}
}

// TestCreateTenantRequiredPluginsIsDenied: a tenant's own value under any
// key NRI reads would override podnet's (NRI reads
// "<key>/container.<name>", then "<key>/pod", then "<key>"), so every one
// is refused, in every mode; podnet's own value under the plain key is
// what the webhook writes and passes.
func TestCreateTenantRequiredPluginsIsDenied(t *testing.T) {
	for _, mode := range hold.Modes {
		f := newFixture(t)
		f.h.Hold = mode
		for _, ann := range []map[string]string{
			{requiredPlugins: "[]"},
			{requiredPlugins: `["podnet","other"]`},
			{requiredPlugins + "/pod": `["podnet"]`},
			{requiredPlugins + "/pod": "[]"},
			{requiredPlugins + "/container.app": "[]"},
			{requiredPlugins + "/container.app": `["podnet"]`},
		} {
			a := map[string]string{v1alpha1.NetworksAnnotation: "data"}
			for k, v := range ann {
				a[k] = v
			}
			wantDenied(t, f.h.Handle(context.Background(), createRequest(t, testPod(a))), "t1/p", "set by podnet's webhook", requiredPlugins)
		}
		own := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", requiredPlugins: v1alpha1.NRIRequiredPluginsValue})
		if resp := f.h.Handle(context.Background(), createRequest(t, own)); !resp.Allowed {
			t.Errorf("mode %s: podnet's own value refused: %v", mode, resp.Result)
		}
	}
}

// TestUpdateRequiredPluginsIsDenied: the runtime reads the annotations
// again when it recreates a sandbox, so none may be added, changed or
// removed later; other annotations may.
func TestUpdateRequiredPluginsIsDenied(t *testing.T) {
	f := newFixture(t)
	f.h.Hold = v1alpha1.HoldNRI
	old := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"})
	edits := map[string]func(p *corev1.Pod){
		"remove":            func(p *corev1.Pod) { delete(p.Annotations, requiredPlugins) },
		"change":            func(p *corev1.Pod) { p.Annotations[requiredPlugins] = "[]" },
		"add pod key":       func(p *corev1.Pod) { p.Annotations[requiredPlugins+"/pod"] = "[]" },
		"add container key": func(p *corev1.Pod) { p.Annotations[requiredPlugins+"/container.app"] = "[]" },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			pod := old.DeepCopy()
			edit(pod)
			wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, old, pod)), "t1/p", requiredPlugins, "leave them as they are")
		})
	}
	pod := old.DeepCopy()
	pod.Annotations["other"] = "x"
	if resp := f.h.Handle(context.Background(), updateRequest(t, old, pod)); !resp.Allowed {
		t.Errorf("an unrelated annotation refused: %v", resp.Result)
	}
}

// TestTolerateMissingPluginsIsDenied: where the runtimes' NRI default
// validator lets a pod run without its required plugins under an
// annotation the admin named, a podnet pod carrying that annotation, in
// any of the forms NRI reads, is refused on CREATE and on UPDATE, in every
// mode; the same key is allowed where nothing names it, and a pod with no
// networks is left alone.
func TestTolerateMissingPluginsIsDenied(t *testing.T) {
	const tolerate = "tolerate.example.com/missing-plugins"
	for _, mode := range hold.Modes {
		f := newFixture(t)
		f.h.Hold = mode
		f.h.NRITolerate = []string{"other.example.com/x", tolerate}
		for _, k := range []string{tolerate, tolerate + "/pod", tolerate + "/container.app"} {
			for _, v := range []string{"true", "false"} {
				pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", k: v})
				wantDenied(t, f.h.Handle(context.Background(), createRequest(t, pod)), "t1/p", k, "without podnet's plugin")
			}
		}
		if resp := f.h.Handle(context.Background(), createRequest(t, testPod(map[string]string{tolerate: "true"}))); !resp.Allowed {
			t.Errorf("mode %s: a pod with no networks refused: %v", mode, resp.Result)
		}
		old := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"})
		pod := old.DeepCopy()
		pod.Annotations[tolerate+"/pod"] = "true"
		wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, old, pod)), "t1/p", tolerate, "without podnet's plugin")

		// A pod admitted before the name was configured keeps what it
		// carries, and may not drop it either.
		f.h.NRITolerate = nil
		before := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data", tolerate: "false"})
		f.h.NRITolerate = []string{tolerate}
		same := before.DeepCopy()
		same.Annotations["other"] = "x"
		if resp := f.h.Handle(context.Background(), updateRequest(t, before, same)); !resp.Allowed {
			t.Errorf("mode %s: an update leaving the key as it was refused: %v", mode, resp.Result)
		}
		dropped := before.DeepCopy()
		delete(dropped.Annotations, tolerate)
		wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, before, dropped)), "t1/p", tolerate, "leave them as they are")

		f.h.NRITolerate = nil
		if resp := f.h.Handle(context.Background(), createRequest(t, testPod(map[string]string{v1alpha1.NetworksAnnotation: "data", tolerate: "true"}))); !resp.Allowed {
			t.Errorf("mode %s: the key refused where no runtime reads it: %v", mode, resp.Result)
		}
	}
}
