package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/policy"
)

// rawProfile is TelcoProfile with a second network, "raw", that allows
// raw sockets.
func rawProfile() *v1alpha1.NetworkProfile {
	p := TelcoProfile()
	raw := p.Spec.Networks[0]
	raw.Name, raw.Bridge, raw.IPAM, raw.AllowRawSockets = "raw", &v1alpha1.BridgeNetwork{Name: "pnbr-raw"}, nil, true
	p.Spec.Networks = append(p.Spec.Networks, raw)
	return p
}

func rawFixture(t *testing.T) *fixture {
	return newFixture(t, testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}), rawProfile())
}

// withCaps is a security context adding one capability and dropping
// others; "" adds none.
func withCaps(add corev1.Capability, drop ...corev1.Capability) *corev1.SecurityContext {
	sc := &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: drop}}
	if add != "" {
		sc.Capabilities.Add = []corev1.Capability{add}
	}
	return sc
}

// TestCreateRefusesNetworkPrivilege: a podnet pod whose spec the agent
// would refuse is refused at CREATE, the denial naming the field, the
// container and the capability or path.
func TestCreateRefusesNetworkPrivilege(t *testing.T) {
	cases := map[string]struct {
		request string
		change  func(p *corev1.Pod)
		want    []string
	}{
		"NET_ADMIN": {"data", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = withCaps("NET_ADMIN") },
			[]string{"t1/p", "spec.containers[0].securityContext.capabilities.add[0]", `"NET_ADMIN"`, `container "app" adds NET_ADMIN`}},
		"SYS_ADMIN in an init container": {"raw", func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup:1", SecurityContext: withCaps("sys_admin")}}
		}, []string{"spec.initContainers[0].securityContext.capabilities.add[0]", `init container "setup" adds SYS_ADMIN`}},
		"privileged": {"raw", func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: new(true)}
		},
			[]string{"spec.containers[0].securityContext.privileged", `container "app" runs privileged`}},
		"NET_RAW added on a network without raw sockets": {"data", func(p *corev1.Pod) { p.Spec.Containers[0].SecurityContext = withCaps("NET_RAW") },
			[]string{"spec.containers[0].securityContext.capabilities.add[0]", `container "app" adds NET_RAW`, `network "data" (interface net1) does not allow raw sockets`}},
		"hostPath of the agent's socket": {"data", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "sock", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run/podnet/cni.sock"}}}}
		}, []string{"spec.volumes[0].hostPath.path", `"/run/podnet/cni.sock"`, `volume "sock" reaches /run/podnet`}},
		"hostPath of /run": {"raw", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run"}}}}
		}, []string{"spec.volumes[0].hostPath.path", `"/run"`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f := rawFixture(t)
			pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: c.request})
			c.change(pod)
			wantDenied(t, f.h.Handle(context.Background(), createRequest(t, pod)), c.want...)
		})
	}
}

// TestCreateAcceptsWhatItProduced: whatever NET_RAW the tenant's
// containers hold, the pod as the webhook patches it passes the agent's
// check, wait container included.
func TestCreateAcceptsWhatItProduced(t *testing.T) {
	f := rawFixture(t)
	for _, request := range []string{"data", "raw", "raw, data@net2"} {
		pod := testPod(map[string]string{v1alpha1.NetworksAnnotation: request})
		pod.Spec.Containers = append(pod.Spec.Containers,
			corev1.Container{Name: "prefixed", Image: "app:1", SecurityContext: withCaps("NET_BIND_SERVICE", "CAP_NET_RAW")},
			corev1.Container{Name: "empty", Image: "app:1", SecurityContext: &corev1.SecurityContext{}})
		pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "setup:1", SecurityContext: withCaps("", "MKNOD")}}
		req := createRequest(t, pod)
		resp := f.h.Handle(context.Background(), req)
		if !resp.Allowed {
			t.Fatalf("%s: denied: %v", request, resp.Result)
		}
		out := created(applyPatch(t, req, resp))
		a, err := approval.VerifyPod(f.verifier(), out)
		if err != nil {
			t.Fatal(err)
		}
		if errs := policy.ValidatePodPrivilege(&out.Spec, a); len(errs) > 0 {
			t.Errorf("%s: the agent would refuse the pod the webhook produced: %v", request, errs)
		}
	}
}

// TestUpdateAttachRefusedWhileNetRawHeld: a pod created without a request
// holds the runtime's NET_RAW; asking at runtime for a network without
// raw sockets is refused (its containers cannot change any more), with
// what to do. A pod that dropped NET_RAW, or a network that allows raw
// sockets, may attach.
func TestUpdateAttachRefusedWhileNetRawHeld(t *testing.T) {
	f := rawFixture(t)
	bare := created(testPod(nil))
	asks := bare.DeepCopy()
	asks.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "data"}
	wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, bare, asks)),
		"t1/p", "spec.containers[0].securityContext.capabilities.drop", `container "app" holds NET_RAW`,
		`network "data" (interface net1) does not allow raw sockets`, "cannot change", "create the pod with podnet.io/networks set")

	// Adding a network without raw sockets to a pod that kept NET_RAW for
	// its raw network: the same.
	raw := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "raw"})
	more := raw.DeepCopy()
	more.Annotations[v1alpha1.NetworksAnnotation] = "raw, data@net2"
	wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, raw, more)), `container "app" holds NET_RAW`, `network "data" (interface net2)`)

	// NET_ADMIN is refused whatever the network.
	admin := created(testPod(nil))
	admin.Spec.Containers[0].SecurityContext = withCaps("NET_ADMIN", "NET_RAW")
	asksRaw := admin.DeepCopy()
	asksRaw.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "raw"}
	wantDenied(t, f.h.Handle(context.Background(), updateRequest(t, admin, asksRaw)), `container "app" adds NET_ADMIN`)

	for name, pod := range map[string]*corev1.Pod{
		"dropped NET_RAW": func() *corev1.Pod {
			p := created(testPod(nil))
			p.Spec.Containers[0].SecurityContext = withCaps("", "NET_RAW")
			return p
		}(),
		"raw network": created(testPod(nil)),
	} {
		t.Run(name, func(t *testing.T) {
			later := pod.DeepCopy()
			later.Annotations = map[string]string{v1alpha1.NetworksAnnotation: "data"}
			if name == "raw network" {
				later.Annotations[v1alpha1.NetworksAnnotation] = "raw"
			}
			resp := f.h.Handle(context.Background(), updateRequest(t, pod, later))
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if _, err := approval.VerifyPod(f.verifier(), applyPatch(t, updateRequest(t, pod, later), resp)); err != nil {
				t.Fatalf("no approval the agent accepts: %v", err)
			}
		})
	}
}

// TestUpdateOfUnchangedRequestLosingRawSocketsRemovesApproval: a pod that
// kept NET_RAW for a network that allowed raw sockets, after the admin
// turned allowRawSockets off: its next UPDATE removes the approval with a
// warning instead of wedging the pod.
func TestUpdateOfUnchangedRequestLosingRawSocketsRemovesApproval(t *testing.T) {
	old := rawFixture(t).admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "raw"})
	narrowed := rawProfile()
	narrowed.Spec.Networks[1].AllowRawSockets = false
	f := newFixture(t, testNamespace("t1", map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}), narrowed)
	pod := old.DeepCopy()
	pod.Labels = map[string]string{"touched": "yes"}
	resp := f.h.Handle(context.Background(), updateRequest(t, old, pod))
	wantPatches(t, resp, []jsonpatch.JsonPatchOperation{
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1approved"},
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1approved-signature"},
	})
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], `container "app" holds NET_RAW`) || !strings.Contains(resp.Warnings[0], "approval was removed") {
		t.Errorf("warnings %q", resp.Warnings)
	}
}

// TestCreateRefusesApprovalWithoutRequest: an approval or a signature on
// a new pod that asks for nothing was judged for another pod.
func TestCreateRefusesApprovalWithoutRequest(t *testing.T) {
	f := newFixture(t)
	stored := f.admitted(t, map[string]string{v1alpha1.NetworksAnnotation: "data"}).Annotations
	for name, annotations := range map[string]map[string]string{
		"approval and signature": {v1alpha1.ApprovedAnnotation: stored[v1alpha1.ApprovedAnnotation], v1alpha1.ApprovedSignatureAnnotation: stored[v1alpha1.ApprovedSignatureAnnotation]},
		"signature alone":        {v1alpha1.ApprovedSignatureAnnotation: "AAAA"},
		"blank request":          {v1alpha1.NetworksAnnotation: " ", v1alpha1.ApprovedAnnotation: stored[v1alpha1.ApprovedAnnotation]},
	} {
		t.Run(name, func(t *testing.T) {
			want := []string{"t1/p", "Invalid value", "asks for no network", "remove it"}
			for k := range annotations {
				if k != v1alpha1.NetworksAnnotation {
					want = append(want, "metadata.annotations["+k+"]")
				}
			}
			if name == "signature alone" {
				want = append(want, `"AAAA"`)
			}
			wantDenied(t, f.h.Handle(context.Background(), createRequest(t, testPod(annotations))), want...)
		})
	}
}

// TestCreateRemovesNetworkStatus: a network status on a new pod, podnet's
// or Multus', is forged or copied: the webhook removes it, whether the pod
// asks for networks or not. On UPDATE it is the agent's, left alone.
func TestCreateRemovesNetworkStatus(t *testing.T) {
	f := newFixture(t)
	forged := `[{"name":"t1/data","interface":"net1","ips":["192.168.100.99"]}]`
	status := map[string]string{v1alpha1.NetworkStatusAnnotation: forged, v1alpha1.MultusNetworkStatusAnnotation: forged}
	removals := []jsonpatch.JsonPatchOperation{
		{Operation: "remove", Path: "/metadata/annotations/podnet.io~1network-status"},
		{Operation: "remove", Path: "/metadata/annotations/k8s.v1.cni.cncf.io~1network-status"},
	}
	wantPatches(t, f.h.Handle(context.Background(), createRequest(t, testPod(status))), removals)

	annotations := map[string]string{v1alpha1.NetworksAnnotation: "data"}
	for k, v := range status {
		annotations[k] = v
	}
	pod := testPod(annotations)
	req := createRequest(t, pod)
	resp := f.h.Handle(context.Background(), req)
	payload, sig := f.expectedApproval(t, pod)
	approved := approvedPatches(payload, sig)
	want := append(append(append([]jsonpatch.JsonPatchOperation{}, approved[:2]...), removals...), approved[2:]...)
	want = append(want, jsonpatch.JsonPatchOperation{Operation: "add", Path: "/spec/initContainers", Value: []corev1.Container{waitContainer(f.h.Wait, &corev1.Pod{}, []string{"net1"})}})
	wantPatches(t, resp, want)
	out := created(applyPatch(t, req, resp))
	for _, k := range []string{v1alpha1.NetworkStatusAnnotation, v1alpha1.MultusNetworkStatusAnnotation} {
		if _, ok := out.Annotations[k]; ok {
			t.Errorf("%s survived the CREATE", k)
		}
	}

	// The agent's status on a running pod stays through a tenant's UPDATE.
	out.Annotations[v1alpha1.NetworkStatusAnnotation] = forged
	touched := out.DeepCopy()
	touched.Labels = map[string]string{"touched": "yes"}
	wantPatches(t, f.h.Handle(context.Background(), updateRequest(t, out, touched)), nil)
}

// TestSpecAfterIsThePatchedSpec: the spec the webhook checks before it
// signs (specAfter) is the spec the API server makes of the pod with the
// NET_RAW drops of the webhook's own patch, whatever the containers'
// security contexts hold, and the pod itself is left as it was.
func TestSpecAfterIsThePatchedSpec(t *testing.T) {
	contexts := []*corev1.SecurityContext{
		nil,
		{},
		{RunAsUser: new(int64(1000)), Capabilities: nil},
		{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE"}}},
		withCaps("", "MKNOD"),
		withCaps("NET_BIND_SERVICE", "MKNOD", "SETUID"),
		withCaps("", "NET_RAW"),
		withCaps("", "CAP_NET_RAW"),
		withCaps("", "ALL"),
		withCaps("NET_RAW"),
	}
	pod := testPod(nil)
	pod.Spec.Containers = nil
	for i, sc := range contexts {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: fmt.Sprintf("app%d", i), Image: "app:1", SecurityContext: sc})
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{Name: fmt.Sprintf("init%d", i), Image: "init:1", SecurityContext: sc.DeepCopy()})
	}
	// A drop list with room to spare: appending to it in place would
	// change the pod the request carries.
	spare := make([]corev1.Capability, 1, 4)
	spare[0] = "MKNOD"
	pod.Spec.Containers[4].SecurityContext.Capabilities.Drop = spare
	before := pod.DeepCopy()

	got := specAfter(pod, podChange{DropNetRaw: true})
	ops, err := json.Marshal(planDropNetRaw(&pod.Spec, ""))
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatchapply.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := patch.Apply(raw(t, pod))
	if err != nil {
		t.Fatal(err)
	}
	var want corev1.Pod
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(*got, want.Spec) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want.Spec)
		t.Errorf("specAfter:\n%s\nthe patched spec:\n%s", g, w)
	}
	if !apiequality.Semantic.DeepEqual(pod, before) || spare[:2][1] != "" {
		t.Error("specAfter changed the pod it was given")
	}
	if same := specAfter(pod, podChange{}); same != &pod.Spec {
		t.Error("without NET_RAW to drop, the spec is not the pod's own")
	}
}
