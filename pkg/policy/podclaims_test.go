package policy

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// podClaim is the pod entry of a template with the claim's devices.
func podClaim(name string, c *resourcev1.ResourceClaim) PodClaim {
	return PodClaim{Source: "spec.resourceClaims[0] (resourceclaimtemplate " + name + ")", Devices: &c.Spec.Devices}
}

func decideWithClaims(annotation string, claims ...PodClaim) (*v1alpha1.Approval, []string) {
	pod := podWith(annotation, "")
	if annotation == "" {
		pod.Annotations = nil
	}
	// The data network may carry the default route.
	profiles := baseProfiles()
	profiles[0].Spec.Networks[0].DefaultRoute = &v1alpha1.DefaultRoutePolicy{Allowed: true}
	a, errs := DecideWithClaims(Input{Namespace: telcoNamespace(), Pod: pod, Prepared: NewProfileSet(profiles)}, claims)
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return a, msgs
}

// TestDecideWithClaims: a pod's annotation and its claims are judged as
// one request, the annotation's interfaces first, each claim's with the
// names its own approval gives them.
func TestDecideWithClaims(t *testing.T) {
	l2 := claimOf([]resourcev1.DeviceRequest{exactly("l2", "l2.telco-data")})
	a, errs := decideWithClaims("", podClaim("l2", l2))
	if len(errs) > 0 || a == nil {
		t.Fatalf("claim-only pod: %+v, %q", a, errs)
	}
	if len(a.Interfaces) != 1 || a.Interfaces[0].Interface != "net1" || a.Interfaces[0].Network != "l2" {
		t.Errorf("claim-only pod gets %+v, want net1 of network l2", a.Interfaces)
	}

	a, errs = decideWithClaims(`[{"name":"uplink","interface":"up0"}]`, podClaim("l2", l2))
	if len(errs) > 0 || a == nil || len(a.Interfaces) != 2 || a.Interfaces[0].Interface != "up0" || a.Interfaces[1].Interface != "net1" {
		t.Errorf("annotation and claim: %+v, %q; want up0 then the claim's net1", a, errs)
	}

	gpu := claimOf([]resourcev1.DeviceRequest{exactly("gpu", "gpu.example.com")})
	if a, errs := decideWithClaims("", podClaim("gpu", gpu)); a != nil || len(errs) > 0 {
		t.Errorf("claims of another driver only: %+v, %q; want nothing asked", a, errs)
	}
	if a, errs := decideWithClaims(`[{"name":"uplink"}]`, podClaim("gpu", gpu)); a != nil || len(errs) > 0 {
		t.Errorf("annotation with another driver's claim: %+v, %q; want nil: Decide judged the annotation", a, errs)
	}
}

// TestDecideWithClaimsRefuses: what neither way asks alone beyond the
// profile, both together may; every refusal names where it was written.
func TestDecideWithClaimsRefuses(t *testing.T) {
	data := exactly("dp", "data.telco-data")
	l2 := claimOf([]resourcev1.DeviceRequest{exactly("l2", "l2.telco-data")})
	tests := []struct {
		name       string
		annotation string
		claims     []PodClaim
		parts      []string
	}{
		{"maxInterfaces counts both ways", `[{"name":"l2","interface":"a0"},{"name":"data","interface":"b0"}]`,
			[]PodClaim{podClaim("l2", l2)},
			[]string{"spec.resourceClaims[0] (resourceclaimtemplate l2) spec.devices.requests[0]", "above maxInterfaces 2"}},
		{"an interface name of both ways", `[{"name":"data"}]`,
			[]PodClaim{podClaim("l2", l2)},
			[]string{"spec.resourceClaims[0] (resourceclaimtemplate l2)", "net1", "already used"}},
		{"the claim beyond the profile", "",
			[]PodClaim{podClaim("big", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"mtu":9200}`, "dp")))},
			[]string{"spec.resourceClaims[0] (resourceclaimtemplate big) spec.devices.config[0].opaque.parameters.mtu", "9200", "1280-9000"}},
		{"two default routes", `[{"name":"data","interface":"d0","ips":["192.168.100.5/24"],"default-route":["192.168.100.1"]}]`,
			[]PodClaim{podClaim("gw", claimOf([]resourcev1.DeviceRequest{data}, podnetConfig(`{"interface":"d1","ips":["192.168.100.6/24"],"default-route":["192.168.100.1"]}`, "dp")))},
			[]string{"spec.resourceClaims[0] (resourceclaimtemplate gw) spec.devices.config[0].opaque.parameters.default-route[0]", "already asked for by element 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, errs := decideWithClaims(tt.annotation, tt.claims...)
			if a != nil || len(errs) == 0 {
				t.Fatalf("approved: %+v", a)
			}
			requireMsg(t, errs, tt.parts...)
		})
	}
}
