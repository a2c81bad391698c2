package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

// claimFor is a claim allocated on one node with one podnet device per
// request, reserved for the pod named uid-<pod>.
func claimFor(name, pod string, requests ...string) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID("claim-" + name)}}
	alloc := &resourceapi.AllocationResult{}
	for i, r := range requests {
		alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r, Driver: v1alpha1.DRADriver, Pool: node, Device: "d" + string(rune('0'+i))})
	}
	// Another driver's device of the same claim is not podnet's.
	alloc.Devices.Results = append(alloc.Devices.Results, resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.example.com", Pool: node, Device: "gpu0"})
	c.Status.Allocation = alloc
	c.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod, UID: types.UID("uid-" + pod)}}
	return c
}

func approvalOf(ifaces ...string) *v1alpha1.Approval {
	a := &v1alpha1.Approval{Namespace: "tenant", Profiles: []v1alpha1.ProfileRef{{Name: "p", Generation: 1}}}
	for _, i := range ifaces {
		a.Interfaces = append(a.Interfaces, v1alpha1.ApprovedInterface{Interface: i, Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data"})
	}
	return a
}

// TestClaimPrepareVerifiesAndPairsDevices: a prepared claim's interfaces
// are paired with its podnet devices in order; an approval that does not
// answer its allocation, or does not verify, is refused naming the claim.
func TestClaimPrepareVerifiesAndPairsDevices(t *testing.T) {
	good := approvalOf("net5", "net6")
	c := &ClaimNetworks{Verify: func(claim *resourceapi.ResourceClaim) (*v1alpha1.Approval, error) {
		switch claim.Name {
		case "forged":
			// As approval.VerifyClaim, the error names the claim.
			return nil, errors.New("resourceclaim tenant/forged: approval signature does not verify")
		case "short":
			return approvalOf("net5"), nil
		}
		return good, nil
	}}
	if err := c.Prepare(claimFor("nets", "p", "a", "b")); err != nil {
		t.Fatal(err)
	}
	got := c.forPod("uid-p")
	if len(got) != 1 || len(got[0].devices) != 2 || got[0].devices[1] != (ClaimDevice{Request: "b", Pool: node, Device: "d1"}) {
		t.Fatalf("prepared %+v, want the claim with devices d0, d1", got)
	}
	for _, name := range []string{"forged", "short"} {
		err := c.Prepare(claimFor(name, "q", "a", "b"))
		if err == nil || strings.Count(err.Error(), "tenant/"+name) != 1 {
			t.Errorf("prepare %s: %v, want a refusal naming the claim once", name, err)
		}
	}
	if c.Claimed("uid-q") {
		t.Error("a refused claim's pod counts as claimed")
	}
	unallocated := claimFor("later", "q", "a")
	unallocated.Status.Allocation = nil
	if err := c.Prepare(unallocated); err == nil {
		t.Error("an unallocated claim was prepared")
	}
	c.Unprepare("claim-nets")
	if c.Claimed("uid-p") {
		t.Error("an unprepared claim still counts")
	}
}

// TestWithClaims: a claim's interfaces follow the pod's own; an interface
// name asked for twice, or a claim approved for another namespace,
// refuses the pod.
func TestWithClaims(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "p"}}
	claim := func(name string, a *v1alpha1.Approval) *preparedClaim {
		return &preparedClaim{ref: ClaimRef{Namespace: "tenant", Name: name}, approval: a}
	}
	a, err := withClaims(pod, approvalOf("net1"), []*preparedClaim{claim("c", approvalOf("net5"))})
	if err != nil || len(a.Interfaces) != 2 || a.Interfaces[1].Interface != "net5" || len(a.Profiles) != 1 {
		t.Fatalf("merged %+v, %v: want net1 then net5, one profile", a, err)
	}
	a, err = withClaims(pod, nil, []*preparedClaim{claim("c", approvalOf("net5"))})
	if err != nil || len(a.Interfaces) != 1 || a.ServiceAccount != v1alpha1.DefaultServiceAccount || a.Namespace != "tenant" {
		t.Fatalf("claims only: %+v, %v", a, err)
	}
	if _, err := withClaims(pod, approvalOf("net5"), []*preparedClaim{claim("c", approvalOf("net5"))}); err == nil || !strings.Contains(err.Error(), `interface "net5"`) {
		t.Errorf("twice net5: %v, want a refusal naming the interface", err)
	}
	other := approvalOf("net7")
	other.Namespace = "elsewhere"
	if _, err := withClaims(pod, nil, []*preparedClaim{claim("c", other)}); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("other namespace: %v, want a refusal", err)
	}
}

// TestClaimDeviceStatus: network data per device from the read-back,
// addresses with their prefix; a device not built is left out.
func TestClaimDeviceStatus(t *testing.T) {
	p := &preparedClaim{approval: approvalOf("net5", "net6"), devices: []ClaimDevice{{Pool: node, Device: "d0"}, {Pool: node, Device: "d1"}}}
	built := []dataplane.InterfaceStatus{{Name: "net5", MAC: "02:00:00:00:00:05", IPs: []string{"192.168.1.5/24"}}}
	got := claimDeviceStatus(p, built)
	if len(got) != 1 || got[0].Device != "d0" || got[0].Driver != v1alpha1.DRADriver ||
		got[0].NetworkData.InterfaceName != "net5" || got[0].NetworkData.IPs[0] != "192.168.1.5/24" || got[0].NetworkData.HardwareAddress != "02:00:00:00:00:05" {
		t.Fatalf("status %+v, want d0 only with net5's data", got)
	}
}

// TestProfileChangeWakesClaimPods: a change of a profile re-judges the
// pods whose prepared claims it granted, though they carry no approval of
// their own; a pod of neither kind is left alone.
func TestProfileChangeWakesClaimPods(t *testing.T) {
	claims := &ClaimNetworks{Verify: func(*resourceapi.ResourceClaim) (*v1alpha1.Approval, error) { return approvalOf("net1"), nil }}
	if err := claims.Prepare(claimFor("nets", "claimed", "a")); err != nil {
		t.Fatal(err)
	}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name, UID: types.UID("uid-" + name)}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pod("claimed"), pod("plain")).Build()
	r := &Reconciler{Client: c, Claims: claims}
	profile := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	got := r.podsOfProfile(context.Background(), profile)
	if len(got) != 1 || got[0].Name != "claimed" {
		t.Errorf("profile p wakes %v, want the claimed pod", got)
	}
	other := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	if got := r.podsOfProfile(context.Background(), other); len(got) != 0 {
		t.Errorf("profile other wakes %v, want none", got)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}
	if got := r.podsInNamespace(context.Background(), ns); len(got) != 1 || got[0].Name != "claimed" {
		t.Errorf("namespace tenant wakes %v, want the claimed pod", got)
	}
}
