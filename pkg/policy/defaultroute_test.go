package policy

import (
	"reflect"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// withDefaultRoute is the base profiles with network "data" allowed to
// carry the pod's default route.
func withDefaultRoute() []v1alpha1.NetworkProfile {
	profiles := baseProfiles()
	for i := range profiles {
		for j := range profiles[i].Spec.Networks {
			if profiles[i].Spec.Networks[j].Name == "data" {
				profiles[i].Spec.Networks[j].DefaultRoute = &v1alpha1.DefaultRoutePolicy{Allowed: true}
			}
		}
	}
	return profiles
}

func TestDecideDefaultRouteWhereAllowed(t *testing.T) {
	a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(`[{"name":"data","default-route":["192.168.100.1","fd00:100::1"]},{"name":"l2"}]`, ""), Profiles: withDefaultRoute()})
	if len(errs) > 0 {
		t.Fatalf("denied:\n%s", joinErrs(errs))
	}
	if got := a.Interfaces[0].DefaultRoute; !reflect.DeepEqual(got, []string{"192.168.100.1", "fd00:100::1"}) {
		t.Fatalf("net1 default route %v", got)
	}
	if a.Interfaces[1].DefaultRoute != nil {
		t.Fatalf("net2 default route %v, want none", a.Interfaces[1].DefaultRoute)
	}
}

func TestDecideDefaultRouteRefusals(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		profiles   []v1alpha1.NetworkProfile
		want       []string
	}{
		{"profile does not allow it", `[{"name":"data","default-route":["192.168.100.1"]}]`, baseProfiles(),
			[]string{"[0].default-route", `network "data"`, `profile "telco-data" does not let this network carry the pod's default route`, "defaultRoute.allowed"}},
		{"not a gateway of the network", `[{"name":"data","default-route":["192.168.100.254"]}]`, withDefaultRoute(),
			[]string{"[0].default-route[0]", "192.168.100.254", "network's gateways only", "192.168.100.1, fd00:100::1"}},
		{"a network without the grant", `[{"name":"l2","default-route":["192.168.100.1"]}]`, withDefaultRoute(),
			[]string{"[0].default-route", `network "l2"`, "does not let this network carry"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith(tc.annotation, ""), Profiles: tc.profiles})
			if len(errs) == 0 {
				t.Fatalf("approved %+v", a)
			}
			requireErr(t, errs, tc.want...)
		})
	}
}

func TestParseDefaultRoute(t *testing.T) {
	reqs, errs := ParseRequest(`[{"name":"data","default-route":["192.168.100.1","fd00:100::1"]}]`)
	if len(errs) > 0 || !reflect.DeepEqual(reqs[0].DefaultRoute, []string{"192.168.100.1", "fd00:100::1"}) {
		t.Fatalf("parsed %+v, errors %v", reqs, errs)
	}
	tests := []struct {
		name, annotation string
		want             []string
	}{
		{"empty list", `[{"name":"data","default-route":[]}]`, []string{"[0].default-route", "name the gateway"}},
		{"not an address", `[{"name":"data","default-route":["gw"]}]`, []string{"[0].default-route[0]", "gw", "not an IP address"}},
		{"a CIDR", `[{"name":"data","default-route":["192.168.100.1/24"]}]`, []string{"[0].default-route[0]", "not an IP address"}},
		{"two of one family", `[{"name":"data","default-route":["192.168.100.1","192.168.100.2"]}]`, []string{"[0].default-route[1]", "one default gateway per family"}},
		{"two elements, one family", `[{"name":"data","default-route":["192.168.100.1"]},{"name":"l2","default-route":["10.0.0.1"]}]`, []string{"[1].default-route[0]", "IPv4 default route is already asked for by element 0"}},
		{"on the primary interface", `[{"interface":"eth0","mtu":1400,"default-route":["10.0.0.1"]}]`, []string{"[0].default-route", "only its mtu may be tuned"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ParseRequest(tc.annotation)
			if len(errs) == 0 {
				t.Fatalf("no error; parsed %+v", got)
			}
			requireErr(t, errs, tc.want...)
		})
	}
}
