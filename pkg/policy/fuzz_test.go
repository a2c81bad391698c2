package policy

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

// FuzzDecide feeds arbitrary annotations and service accounts through the
// parser and the policy. Whatever the input: no panic; a denial always
// explains itself; an approval is deterministic, canonical, bound to the
// request and within the limits of the profiles that granted it.
func FuzzDecide(f *testing.F) {
	for _, seed := range []struct{ annotation, sa string }{
		{"data", ""},
		{"data, l2@lan0, t1/data", ""},
		{"uplink, fabric@f0", "cnf"},
		{`[{"name":"data","interface":"dp0","ips":["192.168.100.7/24","fd00:100::7/64"],"mac":"02:00:00:00:00:07","mtu":9000,"vlan":120,"routes":[{"dst":"10.50.0.0/16","gateway":"192.168.100.1"}]}]`, ""},
		{`[{"interface":"eth0","mtu":8900},{"name":"tagged","vlan":301}]`, "cnf"},
		{`[{"name":"data","vlanid":1}]`, ""},
		{"data,,", "x"},
		{`[{"name":"data","vrf":{"vrfname":"red","table":1001}},{"name":"data","interface":"n2","vrf":{"vrfname":"red","table":1001}}]`, ""},
		{`[{"name":"wg","endpoint":"203.0.113.9:51821","publicKey":"` + peerKey + `"},{"name":"vx","endpoint":"198.51.100.7:4789","vni":5001}]`, ""},
		{`[{"name":"wg","endpoint":"[2001:db8:5::1]:51820","publicKey":"` + peerKey + `","allowedIPs":["10.80.0.0/17"]}]`, ""},
	} {
		f.Add(seed.annotation, seed.sa)
	}
	profiles := append(withVRF(), telcoTunnel())
	f.Fuzz(func(t *testing.T, annotation, sa string) {
		in := Input{Namespace: telcoNamespace(), Pod: podWith(annotation, sa), Profiles: profiles}
		a, errs := Decide(in)
		if len(errs) > 0 {
			if a != nil {
				t.Fatal("approval together with errors")
			}
			for _, e := range errs {
				if e.Detail == "" {
					t.Fatalf("error without a message: %#v", e)
				}
				if !strings.HasPrefix(e.Field, annotationPath.String()) && e.Field != "spec.serviceAccountName" {
					t.Fatalf("error outside the annotation: %s", e.Error())
				}
			}
			if errs[0].Field == "spec.serviceAccountName" {
				return
			}
			if last := errs[len(errs)-1].Error(); !strings.Contains(last, Offer(in)) {
				t.Fatalf("denial does not end with the offer: %s", last)
			}
			return
		}
		if a == nil {
			if strings.TrimSpace(annotation) != "" {
				t.Fatalf("non-blank annotation %q neither approved nor denied", annotation)
			}
			return
		}
		payload, err := approval.Encode(a)
		if err != nil {
			t.Fatal(err)
		}
		// The webhook stamps the issue time before it signs.
		stamped := *a
		stamped.IssuedAt = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		signed, err := approval.Encode(&stamped)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := approval.Decode(signed); err != nil {
			t.Fatalf("approval does not decode strictly: %v\n%s", err, signed)
		}
		again, errs := Decide(in)
		if len(errs) > 0 {
			t.Fatal("second decision differs")
		}
		if b, _ := approval.Encode(again); !bytes.Equal(b, payload) {
			t.Fatalf("not deterministic:\n%s\n%s", payload, b)
		}
		if a.RequestHash != approval.HashRequest(annotation) || a.Namespace != "t1" {
			t.Fatalf("approval not bound to the request: %+v", a)
		}
		checkWithinLimits(t, a, profiles)
		checkVRFsWithinLimits(t, a, profiles)
		// The agent judges by the same resolution: an approval the
		// webhook just gave stands against the same profiles.
		if revs := Revoked(GrantInput{Namespace: in.Namespace, Profiles: profiles, Approval: a}); len(revs) > 0 {
			t.Fatalf("fresh approval revoked against the profiles that granted it: %+v", revs)
		}
	})
}

// FuzzNarrow approves a pod against one profile, then judges the approval
// against that profile as an admin changed it: the narrowed approval never
// asks for more than the signed one, and stays within the changed
// profile's limits.
func FuzzNarrow(f *testing.F) {
	f.Add(`[{"name":"data","vlan":120,"mtu":9000,"routes":[{"dst":"10.50.0.0/16"}]},{"name":"l2"}]`, "100-119", "10.50.0.0/24", int32(1280), int32(1500), uint8(1), false)
	f.Add(`[{"name":"data","mtu":9000,"routes":[{"dst":"10.50.0.0/16"}],"ips":["192.168.100.7/24"]},{"name":"l2"}]`, "100-199", "10.50.0.0/24", int32(1280), int32(1500), uint8(1), false)
	f.Add(`[{"name":"data","mtu":1400,"ips":["192.168.100.7/24"]}]`, "100-199", "10.50.0.0/16", int32(1280), int32(9000), uint8(2), true)
	f.Add("data, l2", "4094", "0.0.0.0/0", int32(9000), int32(1280), uint8(0), false)
	f.Fuzz(func(t *testing.T, annotation, vlans, route string, lo, hi int32, maxIfaces uint8, otherBridge bool) {
		in := Input{Namespace: telcoNamespace(), Pod: podWith(annotation, ""), Profiles: []v1alpha1.NetworkProfile{telcoData()}}
		a, errs := Decide(in)
		if len(errs) > 0 || a == nil {
			return
		}
		p := telcoData()
		n := &p.Spec.Networks[0]
		n.Bridge.VLAN.Allowed = []string{vlans}
		n.Routes.Allowed = []string{route}
		n.MTU = &v1alpha1.MTURange{Min: &lo, Max: &hi}
		p.Spec.MaxInterfaces = int32(maxIfaces % 4)
		if otherBridge {
			n.Bridge.Name = "pnbr-other"
		}
		changed := []v1alpha1.NetworkProfile{p}
		revs := Revoked(GrantInput{Namespace: in.Namespace, Profiles: changed, Approval: a})
		got := Narrow(a, revs)
		for _, r := range revs {
			if r.Reason == "" {
				t.Fatalf("revocation of %s without a reason", r.Interface)
			}
		}
		checkNarrower(t, a, got)
		checkWithinLimits(t, got, changed)
		if again := Revoked(GrantInput{Namespace: in.Namespace, Profiles: changed, Approval: got}); len(again) > 0 {
			t.Fatalf("the narrowed approval is narrowed again: %+v", again)
		}
	})
}

// checkNarrower fails unless every interface of narrowed is one of a with
// at most a lower MTU and fewer routes or default gateways.
func checkNarrower(t *testing.T, a, narrowed *v1alpha1.Approval) {
	t.Helper()
	for _, n := range narrowed.Interfaces {
		var ai *v1alpha1.ApprovedInterface
		for i := range a.Interfaces {
			if a.Interfaces[i].Interface == n.Interface {
				ai = &a.Interfaces[i]
			}
		}
		if ai == nil {
			t.Fatalf("narrowing added interface %s", n.Interface)
		}
		if n.MTU > ai.MTU || (ai.MTU != 0 && n.MTU == 0) {
			t.Fatalf("%s: mtu %d after narrowing, approved %d", n.Interface, n.MTU, ai.MTU)
		}
		for _, r := range n.Routes {
			if !slices.Contains(ai.Routes, r) {
				t.Fatalf("%s: route %+v not approved", n.Interface, r)
			}
		}
		for _, g := range n.DefaultRoute {
			if !slices.Contains(ai.DefaultRoute, g) {
				t.Fatalf("%s: default gateway %s not approved", n.Interface, g)
			}
		}
		same, was := n, *ai
		same.MTU, same.Routes, same.DefaultRoute = 0, nil, nil
		was.MTU, was.Routes, was.DefaultRoute = 0, nil, nil
		if !reflect.DeepEqual(same, was) {
			t.Fatalf("%s: narrowing changed more than mtu and routes:\n%+v\n%+v", n.Interface, n, *ai)
		}
	}
}

// checkWithinLimits re-checks an approval against the profiles by a second,
// simpler route than the policy's own.
func checkWithinLimits(t *testing.T, a *v1alpha1.Approval, profiles []v1alpha1.NetworkProfile) {
	t.Helper()
	byName := map[string]*v1alpha1.NetworkProfile{}
	for i := range profiles {
		byName[profiles[i].Name] = &profiles[i]
	}
	refs := map[string]bool{}
	for _, r := range a.Profiles {
		refs[r.Name] = true
	}
	names := map[string]bool{}
	count := map[string]int{}
	for _, i := range a.Interfaces {
		if names[i.Interface] || len(i.Interface) > 15 || i.Interface == "" || i.Interface == PrimaryInterfaceName {
			t.Fatalf("bad or duplicate interface name %q", i.Interface)
		}
		names[i.Interface] = true
		p := byName[i.Profile]
		if p == nil || !refs[i.Profile] {
			t.Fatalf("interface %s granted by unknown or unlisted profile %q", i.Interface, i.Profile)
		}
		count[i.Profile]++
		if count[i.Profile] > maxInterfaces(p) {
			t.Fatalf("profile %q granted %d interfaces, max %d", p.Name, count[i.Profile], maxInterfaces(p))
		}
		var n *v1alpha1.Network
		for j := range p.Spec.Networks {
			if p.Spec.Networks[j].Name == i.Network {
				n = &p.Spec.Networks[j]
			}
		}
		if n == nil {
			t.Fatalf("network %q not in profile %q", i.Network, p.Name)
		}
		if n.MTU != nil && i.MTU != 0 {
			lo, hi := mtuBounds(n.MTU)
			if i.MTU < lo || i.MTU > hi {
				t.Fatalf("mtu %d outside %d-%d", i.MTU, lo, hi)
			}
		} else if n.MTU == nil && i.MTU != 0 {
			t.Fatalf("mtu %d on a network without an mtu range", i.MTU)
		}
		if i.MAC != "" && !n.AllowStaticMAC {
			t.Fatalf("static mac on network %q", i.Network)
		}
		if i.IPAM != nil && len(i.IPAM.Static) > 0 && !n.IPAM.AllowStatic {
			t.Fatalf("static ips on network %q", i.Network)
		}
		if len(i.Routes) > 0 && n.Routes == nil {
			t.Fatalf("routes on network %q", i.Network)
		}
		checkTunnelWithin(t, i, n)
	}
}

// FuzzProfileValues varies what an admin wrote, as a profile that never
// went through the CRD's validation (or an older one) could hold: the
// policy must still never panic, and must refuse rather than guess.
func FuzzProfileValues(f *testing.F) {
	f.Add(`[{"name":"data","ips":["192.168.100.7/24"],"vlan":120,"routes":[{"dst":"10.50.0.0/16"}]}]`, "192.168.100.0/24", "192.168.100.1", "100-199", "10.50.0.0/16", int32(1280), int32(9000), int32(1500))
	f.Add("data", "10.0.0.0/33", "x", "200-100", "::/0", int32(-1), int32(0), int32(70000))
	f.Add("data", "fd00::/127", "fd00::1", "4094", "0.0.0.0/0", int32(9000), int32(1280), int32(0))
	f.Fuzz(func(t *testing.T, annotation, pool, gw, vlans, route string, lo, hi, def int32) {
		p := telcoData()
		n := &p.Spec.Networks[0]
		n.IPAM.Pools = []string{pool}
		n.IPAM.Gateways = []string{gw}
		n.Bridge.VLAN.Allowed = []string{vlans}
		n.Routes.Allowed = []string{route}
		n.MTU = &v1alpha1.MTURange{Min: &lo, Max: &hi, Default: &def}
		in := Input{Namespace: telcoNamespace(), Pod: podWith(annotation, ""), Profiles: []v1alpha1.NetworkProfile{p}}
		a, errs := Decide(in)
		_ = Offer(in)
		if len(errs) > 0 {
			if a != nil {
				t.Fatal("approval together with errors")
			}
			for _, e := range errs {
				if e.Detail == "" {
					t.Fatalf("error without a message: %#v", e)
				}
			}
			return
		}
		if a != nil {
			checkWithinLimits(t, a, in.Profiles)
			if _, err := approval.Encode(a); err != nil {
				t.Fatal(err)
			}
		}
	})
}
