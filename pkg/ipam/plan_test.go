package ipam

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam/rules"
)

func TestPlanAddresses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ipam v1alpha1.ApprovedIPAM
		// want lists each want as "pool" or "pool=static", in order.
		want string
	}{
		{"one v4 pool", v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}}, "10.0.0.0/24"},
		{"dual stack", v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24", "fd00::/64"}}, "10.0.0.0/24 fd00::/64"},
		{"pool not masked", v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.7/24"}}, "10.0.0.0/24"},
		{"static v4 replaces v4 pools only",
			v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24", "10.1.0.0/24", "fd00::/64"}, Static: []string{"10.1.0.9/24"}},
			"10.1.0.0/24=10.1.0.9/24 fd00::/64"},
		{"static both families",
			v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24", "fd00::/64"}, Static: []string{"fd00::9/64", "10.0.0.9/24"}},
			"fd00::/64=fd00::9/64 10.0.0.0/24=10.0.0.9/24"},
		{"static in /31", v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/31"}, Static: []string{"10.0.0.0/31"}}, "10.0.0.0/31=10.0.0.0/31"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wants, err := planAddresses(tc.ipam)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range wants {
				s := w.pool.String()
				if w.static.IsValid() {
					s += "=" + w.static.String()
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("got %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}

func TestPlanAddressesGateways(t *testing.T) {
	wants, err := planAddresses(v1alpha1.ApprovedIPAM{
		Pools:    []string{"10.0.0.0/24", "fd00::/64"},
		Gateways: []string{"10.0.0.1", "fd00::1/64", "192.168.9.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(wants[0].gateways) != "[10.0.0.1]" || fmt.Sprint(wants[1].gateways) != "[fd00::1]" {
		t.Fatalf("gateways per pool = %v, %v", wants[0].gateways, wants[1].gateways)
	}
	if wants[0].prefixLen() != 24 || wants[1].prefixLen() != 64 {
		t.Fatalf("prefix lengths %d %d", wants[0].prefixLen(), wants[1].prefixLen())
	}
}

func TestPlanAddressesErrors(t *testing.T) {
	for _, tc := range []struct {
		ipam v1alpha1.ApprovedIPAM
		want string
	}{
		{v1alpha1.ApprovedIPAM{}, "ipam.pools: at least one pool is required"},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/33"}}, `ipam.pools[0] "10.0.0.0/33": not a CIDR`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"::ffff:10.0.0.0/120"}}, `ipam.pools[0] "::ffff:10.0.0.0/120": IPv4-mapped`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/16", "10.0.5.0/24"}}, `ipam.pools[1] "10.0.5.0/24" overlaps ipam.pools[0] "10.0.0.0/16"`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Gateways: []string{"gw"}}, `ipam.gateways[0] "gw": not an IP address`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Static: []string{"10.0.0.5"}}, `ipam.static[0] "10.0.0.5": not an address in CIDR form`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Static: []string{"10.9.0.5/24"}}, `ipam.static[0] "10.9.0.5/24": not inside any pool (10.0.0.0/24)`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Static: []string{"10.0.0.0/24"}}, `ipam.static[0] "10.0.0.0/24": is the network address of pool 10.0.0.0/24`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Static: []string{"10.0.0.255/24"}}, `ipam.static[0] "10.0.0.255/24": is the broadcast address of pool 10.0.0.0/24`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"fd00::/64"}, Static: []string{"fd00::/64"}}, `ipam.static[0] "fd00::/64": is the network address of pool fd00::/64`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Gateways: []string{"10.0.0.1"}, Static: []string{"10.0.0.1/24"}}, `ipam.static[0] "10.0.0.1/24": is a gateway of the network`},
		{v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}, Static: []string{"10.0.0.5/24", "10.0.0.5/25"}}, `ipam.static[1] "10.0.0.5/25": the address is listed twice`},
	} {
		_, err := planAddresses(tc.ipam)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("planAddresses(%+v) error = %v, want it to contain %q", tc.ipam, err, tc.want)
		}
	}
}

func TestMatchHeld(t *testing.T) {
	wants, err := planAddresses(v1alpha1.ApprovedIPAM{
		Pools:    []string{"10.0.0.0/24", "fd00::/64"},
		Gateways: []string{"10.0.0.1"},
		Static:   []string{"fd00::9/64"},
	})
	if err != nil {
		t.Fatal(err)
	}
	held := []netip.Addr{
		netip.MustParseAddr("fd00::7"),  // v6 from the pool: static replaced it
		netip.MustParseAddr("10.0.0.1"), // the gateway: never kept
		netip.MustParseAddr("10.0.0.8"), // kept for the v4 pool
		netip.MustParseAddr("fd00::9"),  // kept for the static
		netip.MustParseAddr("10.0.0.9"), // a second v4 address: extra
		{},                              // unparsable claim address: extra
	}
	match, extra := matchHeld(wants, held)
	if fmt.Sprint(match) != "[3 2]" || fmt.Sprint(extra) != "[0 1 4 5]" {
		t.Fatalf("match %v extra %v", match, extra)
	}
}

// FuzzPlanAddresses checks that any approval either fails with an error
// naming an ipam field or gives wants whose addresses lie in their pools and
// are never a network, broadcast or gateway address.
func FuzzPlanAddresses(f *testing.F) {
	f.Add("10.0.0.0/24,fd00::/64", "10.0.0.1", "10.0.0.9/24")
	f.Add("10.0.0.0/31", "", "10.0.0.1/31")
	f.Add("fd00::/127,10.0.0.0/8", "fd00::1", "")
	f.Fuzz(func(t *testing.T, pools, gateways, static string) {
		ipam := v1alpha1.ApprovedIPAM{Pools: split(pools), Gateways: split(gateways), Static: split(static)}
		wants, err := planAddresses(ipam)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ipam.") {
				t.Fatalf("error does not name the field: %v", err)
			}
			return
		}
		for _, w := range wants {
			if !w.static.IsValid() {
				continue
			}
			a := w.static.Addr()
			if !w.pool.Contains(a) || rules.ReservedInPool(w.pool, a) != "" {
				t.Fatalf("static %s in pool %s not allowed", w.static, w.pool)
			}
		}
	})
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
