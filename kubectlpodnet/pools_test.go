package kubectlpodnet

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func claim(network, addr string) v1alpha1.IPClaim {
	return v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.NetworkLabel: network}},
		Spec:       v1alpha1.IPClaimSpec{Network: network, Address: addr},
	}
}

func profileWithPools(name string, nets map[string][]string) v1alpha1.NetworkProfile {
	p := v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for n, pools := range nets {
		p.Spec.Networks = append(p.Spec.Networks, v1alpha1.Network{Name: n, IPAM: &v1alpha1.IPAM{Pools: pools}})
	}
	return p
}

func TestPoolUsage(t *testing.T) {
	profiles := []v1alpha1.NetworkProfile{
		profileWithPools("a", map[string][]string{"data": {"192.168.1.0/24", "fd00:1::/120", "fd00:2::/64"}}),
		profileWithPools("b", map[string][]string{"small": {"10.0.0.0/30"}, "bad": {"not-a-cidr"}}),
		{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{Name: "noipam"}}}},
	}
	claims := []v1alpha1.IPClaim{
		claim("data", "192.168.1.10"), claim("data", "192.168.1.11"), claim("data", "fd00:1::5"),
		claim("small", "10.0.0.1"),
		claim("other", "192.168.1.12"), // another network's address in the same range
	}
	got := poolUsage(profiles, claims)
	want := []string{
		"b/bad/not-a-cidr size=0 inUse=0 free=0 error=true", // unreadable sorts as full
		"b/small/10.0.0.0/30 size=2 inUse=1 free=1 error=false",
		"a/data/192.168.1.0/24 size=254 inUse=2 free=252 error=false",
		"a/data/fd00:1::/120 size=255 inUse=1 free=254 error=false",
		"a/data/fd00:2::/64 size=9223372036854775807 inUse=0 free=9223372036854775807 error=false",
	}
	var have []string
	for _, u := range got {
		have = append(have, fmt.Sprintf("%s/%s/%s size=%d inUse=%d free=%d error=%t", u.Profile, u.Network, u.Pool, u.Size, u.InUse, u.Free, u.Error != ""))
	}
	if strings.Join(have, "\n") != strings.Join(want, "\n") {
		t.Fatalf("pool usage:\n%s\nwant:\n%s", strings.Join(have, "\n"), strings.Join(want, "\n"))
	}
	var b strings.Builder
	if err := writePools(&b, got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "PROFILE  NETWORK  POOL") || !strings.Contains(b.String(), "50.0%") ||
		!strings.Contains(strings.Join(strings.Fields(b.String()), " "), "a data fd00:2::/64 ~2^64 0 ~2^64 0.0%") {
		t.Fatalf("table:\n%s", b.String())
	}
}

// TestPoolUsagePerNamespace: the namespace holding the most addresses of a
// pool shows with the network's cap, per pool; quota slots are not
// addresses.
func TestPoolUsagePerNamespace(t *testing.T) {
	capped := profileWithPools("q", map[string][]string{"data": {"10.1.0.0/24"}})
	limit := int32(4)
	capped.Spec.Networks[0].IPAM.MaxAddressesPerNamespace = &limit
	held := func(addr, ns string) v1alpha1.IPClaim {
		c := claim("data", addr)
		c.Spec.Pod.Namespace = ns
		return c
	}
	slot := held("", "t2")
	k := int32(0)
	slot.Spec.Slot = &k
	got := poolUsage([]v1alpha1.NetworkProfile{capped}, []v1alpha1.IPClaim{
		held("10.1.0.2", "t1"), held("10.1.0.3", "t2"), held("10.1.0.4", "t2"), slot,
	})
	if len(got) != 1 || got[0].InUse != 3 || got[0].Namespaces["t1"] != 1 || got[0].Namespaces["t2"] != 2 {
		t.Fatalf("usage %+v", got)
	}
	if top := topNamespace(got[0]); top != "t2 2/4" {
		t.Fatalf("top namespace %q, want \"t2 2/4\"", top)
	}
	got[0].MaxPerNamespace = 0
	if top := topNamespace(got[0]); top != "t2 2" {
		t.Fatalf("top namespace without a cap %q", top)
	}
	if top := topNamespace(PoolUsage{}); top != "-" {
		t.Fatalf("top namespace of an unused pool %q", top)
	}
}

// TestPoolUsagePerAddressSpace: two network names on one bridge share one
// address space, so each shows the claims of both; a network on another
// bridge with the same pool shows only its own; a claim made before
// spaces were recorded counts for its own network name.
func TestPoolUsagePerAddressSpace(t *testing.T) {
	net := func(name, bridge string) v1alpha1.Network {
		return v1alpha1.Network{Name: name, Bridge: &v1alpha1.BridgeNetwork{Name: bridge}, IPAM: &v1alpha1.IPAM{Pools: []string{"10.1.0.0/24"}}}
	}
	profiles := []v1alpha1.NetworkProfile{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{net("red", "pnbr-x")}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{net("blue", "pnbr-x"), net("green", "pnbr-y")}}},
	}
	inSpace := func(network, addr, space string) v1alpha1.IPClaim {
		c := claim(network, addr)
		c.Spec.AddressSpace = space
		return c
	}
	claims := []v1alpha1.IPClaim{
		inSpace("red", "10.1.0.1", "pnbr-x.bridge"),
		inSpace("blue", "10.1.0.2", "pnbr-x.bridge"),
		inSpace("green", "10.1.0.1", "pnbr-y.bridge"),
		claim("green", "10.1.0.9"), // made before spaces were recorded
	}
	have := map[string]uint64{}
	for _, u := range poolUsage(profiles, claims) {
		have[u.Profile+"/"+u.Network] = u.InUse
	}
	want := map[string]uint64{"a/red": 2, "b/blue": 2, "b/green": 2}
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Fatalf("addresses in use per network: %v, want %v", have, want)
	}
}
