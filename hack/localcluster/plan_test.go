package localcluster

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

func TestValidateOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		o       Options
		wantErr string // substring; "" means valid
	}{
		{"defaults", Options{Name: "podnet", Root: "/r"}, ""},
		{"two nodes", Options{Name: "a-1", Nodes: 2, Root: "/r"}, ""},
		{"empty name", Options{Root: "/r"}, "length 0"},
		{"long name", Options{Name: "abcdefghijkl", Root: "/r"}, "must be 1..11"},
		{"upper case", Options{Name: "Podnet", Root: "/r"}, "must match"},
		{"leading digit", Options{Name: "1pod", Root: "/r"}, "must match"},
		{"underscore", Options{Name: "pod_net", Root: "/r"}, "must match"},
		{"three nodes", Options{Name: "podnet", Nodes: 3, Root: "/r"}, "nodes 3 out of range"},
		{"negative nodes", Options{Name: "podnet", Nodes: -1, Root: "/r"}, "nodes -1 out of range"},
		{"no root", Options{Name: "podnet"}, "root"},
		{"containerd 2", Options{Name: "podnet", Root: "/r", Runtime: RuntimeContainerd2}, ""},
		{"unknown runtime", Options{Name: "podnet", Root: "/r", Runtime: "cri-o"}, `runtime "cri-o": must be one of "containerd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := validateOptions(tc.o)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if o.Nodes < 1 || o.Log == nil || o.Runtime == "" {
					t.Fatalf("defaults not filled: %+v", o)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestPlanLayout(t *testing.T) {
	for _, nodes := range []int{1, 2} {
		l := planLayout("podnet-long", 42, nodes)
		if len(l.Nodes) != nodes {
			t.Fatalf("%d nodes planned, want %d", len(l.Nodes), nodes)
		}
		names := []string{l.NetNS, l.HostIf}
		seenIP := map[netip.Addr]bool{}
		for i, n := range l.Nodes {
			names = append(names, n.NetNS, n.Bridge, n.CNIName, n.Name)
			if n.LinkIf != "" {
				names = append(names, n.LinkIf)
			}
			if seenIP[n.IP] {
				t.Errorf("node %d reuses IP %v", i, n.IP)
			}
			seenIP[n.IP] = true
			if !l.ClusterCIDR.Contains(n.PodCIDR.Addr()) || n.PodCIDR.Bits() < l.ClusterCIDR.Bits() {
				t.Errorf("pod CIDR %v outside cluster CIDR %v", n.PodCIDR, l.ClusterCIDR)
			}
			if !n.PodCIDR.Contains(n.Gateway) {
				t.Errorf("gateway %v outside pod CIDR %v", n.Gateway, n.PodCIDR)
			}
			if l.ClusterCIDR.Contains(n.IP) || l.ServiceCIDR.Contains(n.IP) {
				t.Errorf("node IP %v inside the pod or service range", n.IP)
			}
			for j, m := range l.Nodes {
				if i != j && n.PodCIDR.Overlaps(m.PodCIDR) {
					t.Errorf("pod CIDRs %v and %v overlap", n.PodCIDR, m.PodCIDR)
				}
			}
		}
		if l.ClusterCIDR.Overlaps(l.ServiceCIDR) || l.ClusterCIDR.Overlaps(l.LinkCIDR) {
			t.Errorf("cluster CIDR %v overlaps services %v or link %v", l.ClusterCIDR, l.ServiceCIDR, l.LinkCIDR)
		}
		if !l.ServiceCIDR.Contains(l.ServiceIP) {
			t.Errorf("service IP %v outside %v", l.ServiceIP, l.ServiceCIDR)
		}
		for _, s := range names {
			if !strings.Contains(s, l.Name) {
				t.Errorf("name %q does not carry the cluster name %q", s, l.Name)
			}
		}
		for _, s := range []string{l.HostIf, l.Nodes[0].Bridge, l.Nodes[len(l.Nodes)-1].LinkIf} {
			if len(s) > 15 {
				t.Errorf("interface name %q longer than 15 characters", s)
			}
		}
	}
	two := planLayout("x", 42, 2)
	if two.Nodes[0].NetNS == two.Nodes[1].NetNS || two.Nodes[1].IP != two.Nodes[1].LinkIP {
		t.Errorf("node 2 must have its own netns and its veth address as node IP: %+v", two.Nodes[1])
	}
	// A profile names one host NIC for every node: the data NICs share a
	// name, and a 1-node cluster has none.
	if two.Nodes[0].DataIf != DataNIC || two.Nodes[1].DataIf != DataNIC || len(DataNIC) > 15 {
		t.Errorf("data NICs %q and %q, want %q on both", two.Nodes[0].DataIf, two.Nodes[1].DataIf, DataNIC)
	}
	if one := planLayout("x", 42, 1); one.Nodes[0].DataIf != "" {
		t.Errorf("1-node cluster plans data NIC %q, want none", one.Nodes[0].DataIf)
	}
}

func TestPickIndex(t *testing.T) {
	pref := preferredIndex("podnet")
	if got, err := pickIndex("podnet", nil); err != nil || got != pref {
		t.Fatalf("pickIndex with nothing used = %d, %v; want %d", got, err, pref)
	}
	got, err := pickIndex("podnet", map[int]bool{pref: true})
	if err != nil || got == pref || got < minIndex || got > maxIndex {
		t.Fatalf("pickIndex with the preferred index used = %d, %v", got, err)
	}
	all := map[int]bool{}
	for i := minIndex; i <= maxIndex; i++ {
		all[i] = true
	}
	if _, err := pickIndex("podnet", all); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("pickIndex with every index used: %v, want an error", err)
	}
}

func TestRenderCNIConfig(t *testing.T) {
	l := planLayout("podnet", 30, 2)
	n := l.Nodes[1]
	s, err := renderCNIConfig(n, pathsOf("/c", n), "")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type      string `json:"type"`
			Bridge    string `json:"bridge"`
			IsGateway bool   `json:"isGateway"`
			IPMasq    bool   `json:"ipMasq"`
			IPAM      struct {
				Type    string                `json:"type"`
				DataDir string                `json:"dataDir"`
				Ranges  [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(s), &conf); err != nil {
		t.Fatalf("CNI config is not JSON: %v\n%s", err, s)
	}
	p := conf.Plugins[0]
	if conf.Name != n.CNIName || p.Type != "bridge" || p.Bridge != n.Bridge || !p.IsGateway || p.IPMasq {
		t.Errorf("unexpected bridge settings: %+v", conf)
	}
	if p.IPAM.Type != "host-local" || !strings.HasPrefix(p.IPAM.DataDir, "/c/") || p.IPAM.Ranges[0][0]["subnet"] != "10.30.1.0/24" {
		t.Errorf("unexpected IPAM: %+v", p.IPAM)
	}
}

func TestPlanCerts(t *testing.T) {
	l := planLayout("podnet", 30, 2)
	byFile := map[string]certSpec{}
	for _, s := range planCerts(l) {
		byFile[s.File] = s
	}
	api := byFile["apiserver"]
	var ips []string
	for _, ip := range api.IPs {
		ips = append(ips, ip.String())
	}
	for _, want := range []string{"10.30.255.1", "10.30.128.1", "127.0.0.1"} {
		if !strings.Contains(strings.Join(ips, ","), want) {
			t.Errorf("apiserver certificate lacks IP %s: %v", want, ips)
		}
	}
	for _, n := range l.Nodes {
		c := byFile[n.Dir+"-kubelet-client"]
		if c.CN != "system:node:"+n.Name || len(c.Orgs) != 1 || c.Orgs[0] != "system:nodes" || !c.Client {
			t.Errorf("kubelet client certificate of %s: %+v", n.Name, c)
		}
		s := byFile[n.Dir+"-kubelet-serving"]
		if !s.Server || len(s.IPs) != 1 || s.IPs[0].String() != n.IP.String() {
			t.Errorf("kubelet serving certificate of %s: %+v", n.Name, s)
		}
	}
}

func TestFlagsSorted(t *testing.T) {
	got := strings.Join(flags(map[string]string{"b": "2", "a": "1", "c": "x=y"}), " ")
	if want := "--a=1 --b=2 --c=x=y"; got != want {
		t.Errorf("flags = %q, want %q", got, want)
	}
}

// TestRenderCNIConfigChainsPodnet: with a socket, podnet's plugin follows
// the bridge and asks for the pod annotations.
func TestRenderCNIConfigChainsPodnet(t *testing.T) {
	l := planLayout("podnet", 30, 1)
	n := l.Nodes[0]
	s, err := renderCNIConfig(n, pathsOf("/c", n), "/c/node/podnet/cni.sock")
	if err != nil {
		t.Fatal(err)
	}
	var conf struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(s), &conf); err != nil {
		t.Fatalf("CNI config is not JSON: %v\n%s", err, s)
	}
	if len(conf.Plugins) != 2 || conf.Plugins[0]["type"] != "bridge" {
		t.Fatalf("plugins %v, want the bridge then podnet", conf.Plugins)
	}
	p := conf.Plugins[1]
	caps, _ := p["capabilities"].(map[string]any)
	if p["type"] != "podnet" || p["socket"] != "/c/node/podnet/cni.sock" || caps["io.kubernetes.cri.pod-annotations"] != true {
		t.Errorf("chained entry %v, want type podnet, the socket and the pod-annotations capability", p)
	}
}

// TestValidateOptionsOwnCNIBinDir: attaching at sandbox setup needs the
// cluster's own CNI bin folder (podnet's plugin is copied into it), so
// it implies OwnCNIBinDir; without either the machine's folder is used.
func TestValidateOptionsOwnCNIBinDir(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want bool
	}{
		{Options{Name: "podnet", Root: "/r"}, false},
		{Options{Name: "podnet", Root: "/r", OwnCNIBinDir: true}, true},
		{Options{Name: "podnet", Root: "/r", AttachAtSandboxSetup: true}, true},
	} {
		o, err := validateOptions(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if o.OwnCNIBinDir != tc.want {
			t.Errorf("options %+v: OwnCNIBinDir %v, want %v", tc.o, o.OwnCNIBinDir, tc.want)
		}
	}
}
