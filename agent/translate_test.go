package agent

import (
	"fmt"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

func cidr(t *testing.T, s string) net.IPNet {
	t.Helper()
	ip, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	n.IP = ip
	return *n
}

func TestPlanPod(t *testing.T) {
	mac, _ := net.ParseMAC("02:00:00:00:00:07")
	_, dst, _ := net.ParseCIDR("10.50.0.0/16")
	_, dst6, _ := net.ParseCIDR("fd00:50::/64")
	a := &v1alpha1.Approval{
		PrimaryMTU: 8900,
		Interfaces: []v1alpha1.ApprovedInterface{
			{Interface: "net1", Network: "data", Kind: v1alpha1.KindBridge, Bridge: "pnbr-data", VLAN: 120, MTU: 9000, MAC: "02:00:00:00:00:07",
				IPAM:            &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24"}, Gateways: []string{"192.168.100.1", "fd00:100::1"}},
				CheckDuplicates: true, CheckGateway: true, Settings: map[string]int64{"arp_ignore": 1},
				Routes:       []v1alpha1.ApprovedRoute{{Dst: "10.50.0.0/16", Gateway: "192.168.100.1"}, {Dst: "fd00:50::/64"}},
				DefaultRoute: []string{"192.168.100.1", "fd00:100::1"}},
			{Interface: "net2", Network: "uplink", Kind: v1alpha1.KindMacvlan, Master: "eth1", Mode: "bridge",
				VRF: &v1alpha1.ApprovedVRF{Name: "red", Table: 1001}},
		},
	}
	addrs := map[string][]net.IPNet{"net1": {cidr(t, "192.168.100.7/24")}}
	got, err := planPod("uid-1", "/var/run/netns/cni-1", a, addrs, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := dataplane.Pod{
		UID: "uid-1", NetNS: "/var/run/netns/cni-1", PrimaryMTU: 8900,
		Interfaces: []dataplane.Interface{
			{Name: "net1", Kind: dataplane.KindBridge, Bridge: "pnbr-data", VLAN: 120, MTU: 9000, MAC: mac,
				Addresses:       addrs["net1"],
				CheckDuplicates: true, Settings: map[string]int64{"arp_ignore": 1},
				// Only the gateway of a family net1 has an address of.
				CheckGateways:   []net.IP{net.ParseIP("192.168.100.1")},
				Routes:          []dataplane.Route{{Dst: *dst, Gateway: net.ParseIP("192.168.100.1")}, {Dst: *dst6}},
				DefaultGateways: []net.IP{net.ParseIP("192.168.100.1").To4(), net.ParseIP("fd00:100::1")}},
			{Name: "net2", Kind: dataplane.KindMacvlan, Master: "eth1", Mode: "bridge",
				VRF: &dataplane.VRF{Name: "red", Table: 1001}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("planPod =\n%+v\nwant\n%+v", got, want)
	}
}

func TestPlanPodRejectsMalformedApprovalNamingTheField(t *testing.T) {
	cases := map[string]struct {
		ifc  v1alpha1.ApprovedInterface
		want string
	}{
		"mac":         {v1alpha1.ApprovedInterface{Interface: "net1", MAC: "zz"}, `interfaces[0] ("net1"): mac "zz"`},
		"route dst":   {v1alpha1.ApprovedInterface{Interface: "net1", Routes: []v1alpha1.ApprovedRoute{{Dst: "10.0.0.0"}}}, `routes[0].dst "10.0.0.0"`},
		"route gw":    {v1alpha1.ApprovedInterface{Interface: "net1", Routes: []v1alpha1.ApprovedRoute{{Dst: "10.0.0.0/8", Gateway: "x"}}}, `routes[0].gateway "x"`},
		"default gw":  {v1alpha1.ApprovedInterface{Interface: "net1", DefaultRoute: []string{"gw"}}, `defaultRoute[0] "gw"`},
		"gateway":     {v1alpha1.ApprovedInterface{Interface: "net1", CheckGateway: true, IPAM: &v1alpha1.ApprovedIPAM{Gateways: []string{"g"}}}, `ipam.gateways[0] "g"`},
		"second only": {v1alpha1.ApprovedInterface{Interface: "net1", Routes: []v1alpha1.ApprovedRoute{{Dst: "10.0.0.0/8"}, {Dst: "bad"}}}, `routes[1].dst "bad"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := planPod("u", "/n", &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{c.ifc}}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestNetworkStatus(t *testing.T) {
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Network: "data"}, {Interface: "net2", Network: "uplink"}, {Interface: "net3", Network: "gone"},
	}}
	in := []dataplane.InterfaceStatus{
		{Name: "net2", MAC: "02:00:00:00:00:02", MTU: 1500},
		{Name: "net1", MAC: "02:00:00:00:00:01", MTU: 9000, IPs: []string{"192.168.100.7/24", "fd00:100::7/64"}},
	}
	def := defaultEntry("kindnet", []string{"10.244.0.7", "fd00:10:244::7"}, nil)
	got := networkStatus("tenant", def, a, in)
	want := []v1alpha1.NetworkStatus{
		{Name: "kindnet", Interface: "eth0", IPs: []string{"10.244.0.7", "fd00:10:244::7"}, Default: true},
		{Name: "tenant/data", Interface: "net1", IPs: []string{"192.168.100.7", "fd00:100::7"}, MAC: "02:00:00:00:00:01", MTU: 9000},
		{Name: "tenant/uplink", Interface: "net2", MAC: "02:00:00:00:00:02", MTU: 1500},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("networkStatus = %+v, want %+v", got, want)
	}
	enc := podstate.EncodeStatus(got)
	if !strings.HasPrefix(enc, `[{"name":"kindnet","interface":"eth0","ips":["10.244.0.7","fd00:10:244::7"],"default":true,"dns":{}},`) {
		t.Fatalf("encoded = %s, does not start with the default entry as Multus writes it", enc)
	}
	if !strings.Contains(enc, `"name":"tenant/data","interface":"net1","ips":["192.168.100.7","fd00:100::7"],"mac":"02:00:00:00:00:01","mtu":9000`) {
		t.Fatalf("encoded = %s, not in Multus' network-status shape", enc)
	}
	if !reflect.DeepEqual(podstate.DecodeStatus(enc), got) {
		t.Fatalf("decode(encode) = %+v", podstate.DecodeStatus(enc))
	}
	if podstate.EncodeStatus(nil) != "[]" || podstate.DecodeStatus("not json") != nil {
		t.Fatal("empty status must encode as [] and garbage decode as nothing")
	}
}

func TestDefaultEntryTakesTheSandboxIPs(t *testing.T) {
	cases := []struct {
		name    string
		sandbox []string
		podIPs  []corev1.PodIP
		want    []string
	}{
		{"runtime only: the kubelet has not reported yet", []string{"10.244.0.7"}, nil, []string{"10.244.0.7"}},
		{"kubelet only: a runtime that reports none", nil, []corev1.PodIP{{IP: "10.244.0.7"}, {IP: "fd00::7"}}, []string{"10.244.0.7", "fd00::7"}},
		{"both agree", []string{"10.244.0.7"}, []corev1.PodIP{{IP: "10.244.0.7"}}, []string{"10.244.0.7"}},
		{"both, families in another order: the runtime's wins", []string{"fd00::7", "10.244.0.7"}, []corev1.PodIP{{IP: "10.244.0.7"}, {IP: "fd00::7"}}, []string{"fd00::7", "10.244.0.7"}},
		{"neither", nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := defaultEntry("kindnet", c.sandbox, c.podIPs)
			if e.Name != "kindnet" || e.Interface != "eth0" || !e.Default || !slices.Equal(e.IPs, c.want) {
				t.Fatalf("defaultEntry = %+v, want kindnet on eth0, default, IPs %q", e, c.want)
			}
		})
	}
	// The entry owns its list: the caller's sandbox may be reused.
	sb := []string{"10.244.0.7"}
	e := defaultEntry("kindnet", sb, nil)
	sb[0] = "10.244.0.8"
	if e.IPs[0] != "10.244.0.7" {
		t.Fatalf("defaultEntry shares the caller's slice: %q", e.IPs)
	}
}

// TestStatusUnchangedWhenTheKubeletReportsPodIPs: the status written at the
// first attach, with the runtime's addresses, is what the agent computes
// again once the kubelet has copied them into status.podIPs, so that
// report costs no second write.
func TestStatusUnchangedWhenTheKubeletReportsPodIPs(t *testing.T) {
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{{Interface: "net1", Network: "data"}}}
	in := []dataplane.InterfaceStatus{{Name: "net1", MAC: "02:00:00:00:00:01", MTU: 1500, IPs: []string{"192.168.100.7/24"}}}
	sandbox := []string{"10.244.0.7"}
	first := networkStatus("tenant", defaultEntry("cluster-network", sandbox, nil), a, in)
	r := &Reconciler{}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.NetworkStatusAnnotation: podstate.EncodeStatus(first)}}}
	pod.Status.PodIPs = []corev1.PodIP{{IP: "10.244.0.7"}}
	again := networkStatus("tenant", defaultEntry("cluster-network", sandbox, pod.Status.PodIPs), a, in)
	if set := r.statusPatch(pod, again); set != nil {
		t.Fatalf("the kubelet's podIPs cost a second write: %v", set)
	}
	if first[0].IPs[0] != "10.244.0.7" {
		t.Fatalf("the first status has no eth0 address: %+v", first[0])
	}
}

func TestStatusPatch(t *testing.T) {
	status := []v1alpha1.NetworkStatus{defaultEntry("cluster-network", nil, nil), {Name: "tenant/data", Interface: "net1"}}
	enc := podstate.EncodeStatus(status)
	cases := []struct {
		name   string
		multus bool
		annots map[string]string
		status []v1alpha1.NetworkStatus
		want   string
	}{
		{"new status, podnet key only", false, nil, status, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.NetworkStatusAnnotation, enc)},
		{"new status, both keys", true, nil, status, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, v1alpha1.MultusNetworkStatusAnnotation, enc, v1alpha1.NetworkStatusAnnotation, enc)},
		{"podnet key current, Multus key missing", true, map[string]string{v1alpha1.NetworkStatusAnnotation: enc}, status, fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.MultusNetworkStatusAnnotation, enc)},
		{"both current", true, map[string]string{v1alpha1.NetworkStatusAnnotation: enc, v1alpha1.MultusNetworkStatusAnnotation: enc}, status, ""},
		{"nothing to say on a pod never annotated", true, nil, nil, ""},
		{"emptied", true, map[string]string{v1alpha1.NetworkStatusAnnotation: enc, v1alpha1.MultusNetworkStatusAnnotation: enc}, nil, fmt.Sprintf(`{"metadata":{"annotations":{%q:"[]",%q:"[]"}}}`, v1alpha1.MultusNetworkStatusAnnotation, v1alpha1.NetworkStatusAnnotation)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Reconciler{MultusStatus: c.multus}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: c.annots}}
			got := ""
			if set := r.statusPatch(pod, c.status); set != nil {
				b, err := statusJSON(set, nil)
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != c.want {
				t.Fatalf("patch = %s\nwant    %s", got, c.want)
			}
		})
	}
}

func TestStaleAttachments(t *testing.T) {
	prev := []v1alpha1.NetworkStatus{
		defaultEntry("tenant/data", nil, nil), // the default entry is never ours to release, whatever its name
		{Name: "tenant/data", Interface: "net1"},
		{Name: "tenant/uplink", Interface: "net2"},
		{Name: "tenant/moved", Interface: "net3"},
		{Name: "tenant/noipam", Interface: "net4"},
		{Name: "other/data", Interface: "net5"}, // not this namespace: never ours to release
	}
	had := held("tenant", prev)
	if len(had) != 4 {
		t.Fatalf("held = %v, want the 4 entries of namespace tenant", had)
	}
	pools := &v1alpha1.ApprovedIPAM{Pools: []string{"10.0.0.0/24"}}
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Network: "data", IPAM: pools},
		{Interface: "net9", Network: "moved", IPAM: pools},
		{Interface: "net4", Network: "noipam"},
	}}
	got := stale(had, a)
	want := []attachment{{"uplink", "net2"}, {"moved", "net3"}, {"noipam", "net4"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stale = %v, want %v", got, want)
	}
	if got := stale(had, nil); len(got) != 4 {
		t.Fatalf("stale with no approval = %v, want everything held", got)
	}
}

func TestMissing(t *testing.T) {
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{{Interface: "net1"}, {Interface: "net2"}}}
	if got := missing(a, []dataplane.InterfaceStatus{{Name: "net2"}}); !reflect.DeepEqual(got, []string{"net1"}) {
		t.Fatalf("missing = %v", got)
	}
}

func TestSandboxRetryGrowsThenSlows(t *testing.T) {
	prev := sandboxRetry(0)
	if prev != sandboxRetryFirst {
		t.Fatalf("first retry = %v", prev)
	}
	for n := 1; n < sandboxFastTries; n++ {
		d := sandboxRetry(n)
		if d < prev || d > sandboxRetryFast {
			t.Fatalf("retry %d = %v after %v: want non-decreasing and at most %v", n, d, prev, sandboxRetryFast)
		}
		prev = d
	}
	if sandboxRetry(sandboxFastTries) != sandboxRetrySlow {
		t.Fatalf("retry after the fast phase = %v, want %v", sandboxRetry(sandboxFastTries), sandboxRetrySlow)
	}
}
