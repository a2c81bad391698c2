package dra

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/agent/dra/dratest"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

// TestClaimPrepareVerifiesAndPairsDevices: a prepared claim's interfaces
// are paired with its podnet devices in order; an approval that does not
// answer its allocation, or does not verify, is refused naming the claim.
func TestClaimPrepareVerifiesAndPairsDevices(t *testing.T) {
	good := dratest.Approval("net5", "net6")
	c := &ClaimNetworks{Verify: func(claim *resourceapi.ResourceClaim) (*v1alpha1.Approval, error) {
		switch claim.Name {
		case "forged":
			// As approval.VerifyClaim, the error names the claim.
			return nil, errors.New("resourceclaim tenant/forged: approval signature does not verify")
		case "short":
			return dratest.Approval("net5"), nil
		}
		return good, nil
	}}
	if err := c.Prepare(dratest.Claim("nets", "p", "a", "b")); err != nil {
		t.Fatal(err)
	}
	got := c.forPod("uid-p")
	if len(got) != 1 || len(got[0].devices) != 2 || got[0].devices[1] != (ClaimDevice{Request: "b", Pool: dratest.Node, Device: "d1"}) {
		t.Fatalf("prepared %+v, want the claim with devices d0, d1", got)
	}
	for _, name := range []string{"forged", "short"} {
		err := c.Prepare(dratest.Claim(name, "q", "a", "b"))
		if err == nil || strings.Count(err.Error(), "tenant/"+name) != 1 {
			t.Errorf("prepare %s: %v, want a refusal naming the claim once", name, err)
		}
	}
	if c.Claimed("uid-q") {
		t.Error("a refused claim's pod counts as claimed")
	}
	unallocated := dratest.Claim("later", "q", "a")
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
	claim := func(name string, a *v1alpha1.Approval) *VerifiedClaim {
		return &VerifiedClaim{ref: ClaimRef{Namespace: "tenant", Name: name}, approval: a}
	}
	a, err := withClaims(pod, dratest.Approval("net1"), []*VerifiedClaim{claim("c", dratest.Approval("net5"))})
	if err != nil || len(a.Interfaces) != 2 || a.Interfaces[1].Interface != "net5" || len(a.Profiles) != 1 {
		t.Fatalf("merged %+v, %v: want net1 then net5, one profile", a, err)
	}
	a, err = withClaims(pod, nil, []*VerifiedClaim{claim("c", dratest.Approval("net5"))})
	if err != nil || len(a.Interfaces) != 1 || a.ServiceAccount != v1alpha1.DefaultServiceAccount || a.Namespace != "tenant" {
		t.Fatalf("claims only: %+v, %v", a, err)
	}
	if _, err := withClaims(pod, dratest.Approval("net5"), []*VerifiedClaim{claim("c", dratest.Approval("net5"))}); err == nil || !strings.Contains(err.Error(), `interface "net5"`) {
		t.Errorf("twice net5: %v, want a refusal naming the interface", err)
	}
	other := dratest.Approval("net7")
	other.Namespace = "elsewhere"
	if _, err := withClaims(pod, nil, []*VerifiedClaim{claim("c", other)}); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Errorf("other namespace: %v, want a refusal", err)
	}
}

// TestClaimDeviceStatus: network data per device from the read-back,
// addresses with their prefix; a device not built is left out.
func TestClaimDeviceStatus(t *testing.T) {
	p := &VerifiedClaim{approval: dratest.Approval("net5", "net6"), devices: []ClaimDevice{{Pool: dratest.Node, Device: "d0"}, {Pool: dratest.Node, Device: "d1"}}}
	built := []dataplane.InterfaceStatus{{Name: "net5", MAC: "02:00:00:00:00:05", IPs: []string{"192.168.1.5/24"}}}
	got := claimDeviceStatus(p, built)
	if len(got) != 1 || got[0].Device != "d0" || got[0].Driver != v1alpha1.DRADriver ||
		got[0].NetworkData.InterfaceName != "net5" || got[0].NetworkData.IPs[0] != "192.168.1.5/24" || got[0].NetworkData.HardwareAddress != "02:00:00:00:00:05" {
		t.Fatalf("status %+v, want d0 only with net5's data", got)
	}
}

// TestClaimHostDeviceNamesItsNIC: a host-device interface's allocated
// device names the node NIC the attach takes (Allocated); a device that
// is not a NIC of the interface's network refuses the claim.
func TestClaimHostDeviceNamesItsNIC(t *testing.T) {
	a := dratest.Approval("net5", "net6")
	a.Interfaces[1] = v1alpha1.ApprovedInterface{Interface: "net6", Network: "fast", Profile: "p", Kind: v1alpha1.KindHostDevice,
		Devices: &v1alpha1.ApprovedDevices{Names: []string{"ens*"}}}
	c := &ClaimNetworks{Verify: func(*resourceapi.ResourceClaim) (*v1alpha1.Approval, error) { return a, nil }}
	claim := dratest.Claim("nics", "p", "a", "b")
	nicDevice, _ := HostDeviceName("p", "fast", "ens1f0")
	claim.Status.Allocation.Devices.Results[1].Device = nicDevice
	if err := c.Prepare(claim); err != nil {
		t.Fatal(err)
	}
	if got := Allocated(c.forPod("uid-p")); len(got) != 1 || got["net6"] != "ens1f0" {
		t.Fatalf("Allocated = %v, want net6 on ens1f0 only", got)
	}
	for _, device := range []string{"d1", DeviceName("other", "fast", 0) + "x"} {
		forged := dratest.Claim("forged", "q", "a", "b")
		forged.Status.Allocation.Devices.Results[1].Device = device
		err := c.Prepare(forged)
		if err == nil || !strings.Contains(err.Error(), `device "`+device+`" is not a NIC of network "fast"`) {
			t.Errorf("device %s: %v, want a refusal naming it", device, err)
		}
	}
}
