package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseRequestForms(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		want       []NetworkRequest
	}{
		{name: "blank", annotation: "  ", want: nil},
		{
			name:       "short form with spaces, interface and own namespace",
			annotation: " data, uplink@net2 ,t1/l2",
			want: []NetworkRequest{
				{Name: "data", Interface: "net1"},
				{Name: "uplink", Interface: "net2"},
				{Name: "l2", Namespace: "t1", Interface: "net3"},
			},
		},
		{
			name:       "unnamed interfaces are named by their position, as Multus names them",
			annotation: "data@dp0, data, l2@net5, data",
			want: []NetworkRequest{
				{Name: "data", Interface: "dp0"},
				{Name: "data", Interface: "net2"},
				{Name: "l2", Interface: "net5"},
				{Name: "data", Interface: "net4"},
			},
		},
		{
			name:       "spaces around / and @ do not count",
			annotation: "t1 / data @ dp0 ,\tl2\t@\tnet9",
			want: []NetworkRequest{
				{Name: "data", Namespace: "t1", Interface: "dp0"},
				{Name: "l2", Interface: "net9"},
			},
		},
		{
			name:       "json null for a Multus key counts as absent",
			annotation: `[{"name":"data","cni-args":null,"default-route":null}]`,
			want:       []NetworkRequest{{Name: "data", Interface: "net1"}},
		},
		{
			name:       "json list with every field",
			annotation: `[{"name":"data","interface":"dp0","ips":["192.168.100.7/24","fd00:100::7/64"],"mac":"02:00:00:00:00:07","mtu":9000,"vlan":120,"routes":[{"dst":"10.50.0.0/16","gateway":"192.168.100.1"},{"dst":"fd50::/48"}]}]`,
			want: []NetworkRequest{{
				Name: "data", Interface: "dp0", IPs: []string{"192.168.100.7/24", "fd00:100::7/64"},
				MAC: "02:00:00:00:00:07", MTU: 9000, VLAN: 120,
				Routes: []RouteRequest{{Dst: "10.50.0.0/16", Gateway: "192.168.100.1"}, {Dst: "fd50::/48"}},
			}},
		},
		{
			name:       "json primary interface tuning takes no netN",
			annotation: `[{"interface":"eth0","mtu":8900},{"name":"data"}]`,
			want: []NetworkRequest{
				{Interface: "eth0", MTU: 8900, Primary: true},
				{Name: "data", Interface: "net1"},
			},
		},
		{name: "empty json list", annotation: "[]", want: []NetworkRequest{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ParseRequest(tc.annotation)
			if len(errs) > 0 {
				t.Fatalf("unexpected errors:\n%s", joinErrs(errs))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	long := strings.Repeat("x", 16)
	tests := []struct {
		name       string
		annotation string
		// want are the parts one error must contain: the field path, the
		// value and what is wrong.
		want []string
	}{
		{"unknown json field", `[{"name":"data","vlanid":5}]`, []string{`unknown field "vlanid"`, "podnet.io/networks"}},
		{"json not a list", `[{"name":"data"}`, []string{"not a valid JSON network list"}},
		{"json element not an object", `[1]`, []string{"not a valid JSON network list"}},
		{"json trailing data", `[{"name":"data"}] [{"name":"l2"}]`, []string{"unexpected data after the JSON network list"}},
		{"json wrong type", `[{"name":"data","mtu":"9000"}]`, []string{"not a valid JSON network list", "mtu"}},
		{"duplicate interface (json)", `[{"name":"data","interface":"dp0"},{"name":"l2","interface":"dp0"}]`, []string{"[1].interface", `"dp0"`, `network "l2"`, `already used by element 0 (network "data")`}},
		{"duplicate interface (short)", "data@a, l2@a", []string{"[1].interface", `"a"`, `network "l2"`, "already used"}},
		{"interface name too long", "data@" + long, []string{"[0].interface", long, `network "data"`, "at most 15 characters"}},
		{"interface name with slash", "data@a/b", []string{"[0].interface", "a/b", "not a valid interface name"}},
		{"interface name with colon", `[{"name":"data","interface":"a:b"}]`, []string{"[0].interface", "a:b", "not a valid interface name"}},
		{"interface name with comma", `[{"name":"data","interface":"net1,x"}]`, []string{"[0].interface", "net1,x", "not a valid interface name", "','"}},
		{"interface eth0 for a network", "data@eth0", []string{"[0].interface", "eth0", "the pod's own interface"}},
		{"interface lo", "data@lo", []string{"[0].interface", "lo", "the pod's own interface"}},
		{"interface with %d", "data@net%d", []string{"[0].interface", "net%d", "not a valid interface name"}},
		{"interface with a space", `[{"name":"data","interface":"a b"}]`, []string{"[0].interface", "not a valid interface name"}},
		{"interface dot", "data@..", []string{"[0].interface", "not a valid interface name"}},
		{"stray comma", "data,,l2", []string{"[1]", "empty element"}},
		{"trailing comma", "data,", []string{"[1]", "empty element"}},
		{"nothing after @", "data@", []string{"[0].interface", "nothing after @"}},
		{"nothing before /", "/data", []string{"[0].namespace", "nothing before /"}},
		{"no name before @", "@net1", []string{"[0].name", "no network name"}},
		{"bad network name", "Data", []string{"[0].name", "Data", "not a network name"}},
		{"bad namespace", "Bad_NS/data", []string{"[0].namespace", "Bad_NS", "not a namespace name"}},
		{"bad cidr", `[{"name":"data","ips":["192.168.100.300/24"]}]`, []string{"[0].ips[0]", "192.168.100.300/24", `network "data"`, "CIDR"}},
		{"address without prefix", `[{"name":"data","ips":["192.168.100.7"]}]`, []string{"[0].ips[0]", "192.168.100.7", "CIDR"}},
		{"ipv4-mapped ipv6", `[{"name":"data","ips":["::ffff:192.168.100.7/120"]}]`, []string{"[0].ips[0]", "IPv4-mapped"}},
		{"two ipv4 addresses", `[{"name":"data","ips":["192.168.100.7/24","192.168.100.8/24"]}]`, []string{"[0].ips[1]", "192.168.100.8/24", "one IPv4 address per interface"}},
		{"bad mac", `[{"name":"data","mac":"02:00:00:00:00"}]`, []string{"[0].mac", "02:00:00:00:00", "not an Ethernet MAC"}},
		{"infiniband mac", `[{"name":"data","mac":"00:00:00:00:fe:80:00:00:00:00:00:00:02:00:5e:10:00:00:00:01"}]`, []string{"[0].mac", "not an Ethernet MAC"}},
		{"negative mtu", `[{"name":"data","mtu":-1}]`, []string{"[0].mtu", "-1", "mtu must be positive"}},
		{"vlan too big", `[{"name":"data","vlan":4095}]`, []string{"[0].vlan", "4095", "1-4094"}},
		{"route dst not cidr", `[{"name":"data","routes":[{"dst":"10.50.0.0"}]}]`, []string{"[0].routes[0].dst", "10.50.0.0", "not a CIDR"}},
		{"route dst host bits", `[{"name":"data","routes":[{"dst":"10.50.0.1/16"}]}]`, []string{"[0].routes[0].dst", "10.50.0.1/16", "did you mean 10.50.0.0/16"}},
		{"route duplicate dst", `[{"name":"data","routes":[{"dst":"10.50.0.0/16"},{"dst":"10.50.0.0/16"}]}]`, []string{"[0].routes[1].dst", "10.50.0.0/16", "asked for twice"}},
		{"route gateway not ip", `[{"name":"data","routes":[{"dst":"10.50.0.0/16","gateway":"gw"}]}]`, []string{"[0].routes[0].gateway", "gw", "not an IP address"}},
		{"route gateway family", `[{"name":"data","routes":[{"dst":"10.50.0.0/16","gateway":"fd00::1"}]}]`, []string{"[0].routes[0].gateway", "fd00::1", "family"}},
		{"unnamed element that is not eth0", `[{"interface":"net1"}]`, []string{"[0].name", "Required value"}},
		{"primary with ips", `[{"interface":"eth0","mtu":1400,"ips":["10.0.0.1/24"]}]`, []string{"[0].ips", "only its mtu may be tuned"}},
		{"primary without mtu", `[{"interface":"eth0"}]`, []string{"[0].mtu", "needs an mtu"}},
		{"primary twice", `[{"interface":"eth0","mtu":1400},{"interface":"eth0","mtu":1500}]`, []string{"[1].interface", "eth0", "already tuned by element 0"}},
		{"two @", "data@net1@net2", []string{"[0].interface", "data@net1@net2", "more than one '@'"}},
		{"two /", "a/b/c", []string{"[0]", "a/b/c", "more than one '/'"}},
		{"positional name taken by a named element", "data, l2@net1", []string{"[1].interface", `"net1"`, "already used by element 0", "position"}},
		{"json object instead of a list", `{"name":"data"}`, []string{"podnet.io/networks", "wrap the object in [ ]"}},
		{"multus cni-args", `[{"name":"data","cni-args":{"foo":"bar"}}]`, []string{"[0].cni-args", `Multus key "cni-args"`, "never passes raw configuration to a plugin"}},
		{"multus infiniband-guid", `[{"name":"data","infiniband-guid":"c2:11:22:33:44:55:66:77"}]`, []string{"[0].infiniband-guid", "Ethernet interfaces only"}},
		{"multus deviceID", `[{"name":"data","deviceID":"0000:03:00.1"}]`, []string{"[0].deviceID", "picks a free NIC"}},
		{"multus portMappings", `[{"name":"data","portMappings":[{"hostPort":8080,"containerPort":80}]}]`, []string{"[0].portMappings", "port mappings"}},
		{"multus bandwidth", `[{"name":"data","bandwidth":{"ingressRate":1000}}]`, []string{"[0].bandwidth", "shape traffic"}},
		{"multus interfaceRequest", `[{"name":"data","interfaceRequest":"net1"}]`, []string{"[0].interfaceRequest", `write "interface"`}},
		{"too many elements", strings.TrimSuffix(strings.Repeat("l2,", maxRequests+1), ","), []string{"65 networks", "at most 64"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ParseRequest(tc.annotation)
			if len(errs) == 0 {
				t.Fatalf("no error; parsed %+v", got)
			}
			if got != nil {
				t.Fatalf("requests returned together with errors: %+v", got)
			}
			requireErr(t, errs, tc.want...)
		})
	}
}
