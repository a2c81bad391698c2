package policy

import (
	resourcev1 "k8s.io/api/resource/v1"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestHostDeviceGrant: a hostDevice network's approval carries its
// selector, never a NIC; a tenant cannot set a MAC on it; any change of
// the selector under a running pod takes the NIC back.
func TestHostDeviceGrant(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "a"}}}
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "a"}},
			Networks: []v1alpha1.Network{{
				Name:       "fronthaul",
				HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f*"}, Drivers: []string{"ixgbe"}},
				IPAM:       &v1alpha1.IPAM{Pools: []string{"10.9.0.0/24"}},
			}},
		},
	}}
	a := decided("fronthaul", ns, profiles)
	ai := a.Interfaces[0]
	want := &v1alpha1.ApprovedDevices{Names: []string{"ens3f*"}, Drivers: []string{"ixgbe"}}
	if ai.Kind != v1alpha1.KindHostDevice || !reflect.DeepEqual(ai.Devices, want) || ai.Master != "" || ai.Bridge != "" {
		t.Fatalf("approved %+v; want kind host-device with the selector %+v", ai, want)
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns.Name, Annotations: map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"fronthaul","mac":"02:00:00:00:00:01"}]`}}}
	if _, errs := Decide(Input{Namespace: ns, Pod: pod, Profiles: profiles}); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "mac") {
		t.Fatalf("a MAC on a host device: %v; want refused", errs)
	}

	in := GrantInput{Namespace: ns, Profiles: profiles, Approval: a}
	if got := Revoked(in); len(got) != 0 {
		t.Fatalf("nothing changed, Revoked = %+v", got)
	}
	profiles[0].Spec.Networks[0].HostDevice.Names = []string{"ens4f*"}
	got := Revoked(in)
	if len(got) != 1 || !got[0].Detached() || !strings.Contains(got[0].Reason, "host devices names ens3f* and drivers ixgbe is now names ens4f* and drivers ixgbe") {
		t.Fatalf("selector changed, Revoked = %+v; want net1 detached naming both selectors", got)
	}
}

// TestHostDeviceThroughDRAOnlyByClaim: a hostDevice network offered
// through DRA is granted to a ResourceClaim of its device class, with the
// same selector, and refused to an annotation, naming the class: only
// the scheduler hands out its NICs.
func TestHostDeviceThroughDRAOnlyByClaim(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}}
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
			Name:       "fronthaul",
			HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f*"}},
			DRA:        &v1alpha1.DRAOffer{},
		}}},
	}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns.Name, Annotations: map[string]string{v1alpha1.NetworksAnnotation: "fronthaul"}}}
	_, errs := Decide(Input{Namespace: ns, Pod: pod, Profiles: profiles})
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), `network "fronthaul" gives whole node NICs through DRA`) ||
		!strings.Contains(errs.ToAggregate().Error(), `ResourceClaim of device class "fronthaul.p"`) {
		t.Fatalf("by annotation: %v; want refused, naming the device class", errs)
	}
	claim := claimOf([]resourcev1.DeviceRequest{exactly("nic", "fronthaul.p")})
	a, cerrs := DecideClaim(ClaimInput{Namespace: ns, Claim: claim, Prepared: NewProfileSet(profiles)})
	if len(cerrs) > 0 || len(a.Interfaces) != 1 || a.Interfaces[0].Kind != v1alpha1.KindHostDevice ||
		!reflect.DeepEqual(a.Interfaces[0].Devices, &v1alpha1.ApprovedDevices{Names: []string{"ens3f*"}}) {
		t.Fatalf("by claim: %+v, %v; want net1 of kind host-device with the selector", a, cerrs)
	}
	// A pod that names the claim is judged with it: the claim's request
	// passes, the same network in its annotation does not.
	withClaim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns.Name}}
	in := Input{Namespace: ns, Pod: withClaim, Prepared: NewProfileSet(profiles)}
	pc := PodClaim{Source: "spec.resourceClaims[0] (resourceclaim nic)", Devices: &claim.Spec.Devices}
	if a, errs := DecideWithClaims(in, []PodClaim{pc}); len(errs) > 0 || len(a.Interfaces) != 1 {
		t.Fatalf("a pod naming the claim: %+v, %v; want its one interface", a, errs)
	}
	withClaim.Annotations = map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"fronthaul","interface":"net2"}]`}
	_, errs = DecideWithClaims(in, []PodClaim{pc})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "metadata.annotations[podnet.io/networks][0].name") || !strings.Contains(errs[0].Error(), "not by annotation") {
		t.Fatalf("the network by annotation beside the claim: %v; want the annotation's element refused", errs)
	}
}

// TestVFGrant: a hostDevice network of VFs approves a selector of VFs
// with the spoof check on unless the profile turns it off; a VLAN within
// the profile's, its default otherwise, never another; a MAC where the
// profile allows one. A change of the spoof check, the trust or the VLANs
// under a running pod takes the VF back.
func TestVFGrant(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}}
	def := int32(100)
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.NetworkProfileSpec{
			Networks: []v1alpha1.Network{{
				Name: "midhaul",
				HostDevice: &v1alpha1.HostDeviceNetwork{Names: []string{"ens3f0"},
					VF: &v1alpha1.VFPolicy{VLAN: &v1alpha1.VLANPolicy{Default: &def, Allowed: []string{"120-129"}}}},
				AllowStaticMAC: true,
			}},
		},
	}}
	a := decided(`[{"name":"midhaul","vlan":121,"mac":"02:00:00:00:00:01"}]`, ns, profiles)
	ai := a.Interfaces[0]
	want := &v1alpha1.ApprovedDevices{Names: []string{"ens3f0"}, VF: &v1alpha1.ApprovedVF{SpoofCheck: true}}
	if ai.Kind != v1alpha1.KindHostDevice || !reflect.DeepEqual(ai.Devices, want) || ai.VLAN != 121 || ai.MAC != "02:00:00:00:00:01" {
		t.Fatalf("approved %+v (devices %+v); want VFs of ens3f0, spoof check on, VLAN 121 and the MAC", ai, ai.Devices)
	}
	if got := decided("midhaul", ns, profiles).Interfaces[0].VLAN; got != 100 {
		t.Fatalf("no VLAN asked: got %d, want the default 100", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns.Name, Annotations: map[string]string{v1alpha1.NetworksAnnotation: `[{"name":"midhaul","vlan":300}]`}}}
	_, errs := Decide(Input{Namespace: ns, Pod: pod, Profiles: profiles})
	if err := errs.ToAggregate(); err == nil || !strings.Contains(err.Error(), "vlan") || !strings.Contains(err.Error(), "300") || !strings.Contains(err.Error(), "120-129") {
		t.Fatalf("VLAN 300: %v; want refused naming the VLAN and the allowed ones", err)
	}

	in := GrantInput{Namespace: ns, Profiles: profiles, Approval: a}
	if got := Revoked(in); len(got) != 0 {
		t.Fatalf("nothing changed, Revoked = %+v", got)
	}
	off := false
	profiles[0].Spec.Networks[0].HostDevice.VF.SpoofCheck = &off
	got := Revoked(in)
	if len(got) != 1 || !got[0].Detached() || !strings.Contains(got[0].Reason, "spoof check on, trust off) is now VFs of names ens3f0 (spoof check off") {
		t.Fatalf("spoof check turned off, Revoked = %+v; want net1 detached naming both", got)
	}
	profiles[0].Spec.Networks[0].HostDevice.VF.SpoofCheck = nil
	profiles[0].Spec.Networks[0].HostDevice.VF.VLAN.Allowed = []string{"125-129"}
	if got := Revoked(in); len(got) != 1 || !strings.Contains(got[0].Reason, "vlan") {
		t.Fatalf("VLAN 121 no longer allowed, Revoked = %+v; want net1 revoked naming the vlan", got)
	}
}
