package burst

import (
	"encoding/json"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const nodeConflist = `{"cniVersion":"1.0.0","name":"pn-burst","plugins":[{"type":"bridge","bridge":"cni-burst"}]}`

var paths = multusPaths{Kubeconfig: "/c/kc", BinDir: "/c/cni-bin", CNIDir: "/c/n1/multus", ConfDir: "/c/n1/multus.d", LogFile: "/c/n1/multus.log"}

// TestMultusConfDelegatesToTheNodeNetwork: the Multus configuration keeps
// the node's own conflist whole as its first delegate, speaks its CNI
// version, and names every path it was given, so that nothing falls back
// to Multus' machine-wide defaults.
func TestMultusConfDelegatesToTheNodeNetwork(t *testing.T) {
	b, err := multusConf([]byte(nodeConflist), paths)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var node map[string]any
	if err := json.Unmarshal([]byte(nodeConflist), &node); err != nil {
		t.Fatal(err)
	}
	if got["type"] != "multus" || got["name"] != multusNetworkName || got["cniVersion"] != "1.0.0" {
		t.Errorf("type, name, cniVersion = %v, %v, %v", got["type"], got["name"], got["cniVersion"])
	}
	if d, _ := got["delegates"].([]any); len(d) != 1 || !reflect.DeepEqual(d[0], node) {
		t.Errorf("delegates %v, want the node's conflist %v", got["delegates"], node)
	}
	for k, want := range map[string]string{"kubeconfig": paths.Kubeconfig, "binDir": paths.BinDir, "cniDir": paths.CNIDir, "confDir": paths.ConfDir, "logFile": paths.LogFile} {
		if got[k] != want {
			t.Errorf("%s = %v, want %q", k, got[k], want)
		}
	}
}

func TestMultusConfRefusesMissingInput(t *testing.T) {
	if _, err := multusConf([]byte("{"), paths); err == nil || !strings.Contains(err.Error(), "node's CNI configuration") {
		t.Errorf("a broken delegate: error %v", err)
	}
	p := paths
	p.CNIDir = ""
	if _, err := multusConf([]byte(nodeConflist), p); err == nil || !strings.Contains(err.Error(), "cniDir is empty") {
		t.Errorf("no cniDir: error %v, want one naming cniDir", err)
	}
}

// TestNADManifestCarriesBridgeAndHostLocal: the attachment's config is
// the reference bridge plugin with host-local IPAM in the given folder.
func TestNADManifestCarriesBridgeAndHostLocal(t *testing.T) {
	m, err := nadManifest(nad{Name: "m1", Bridge: "mbr1", Subnet: "10.211.0.0/16"}, "burst-multus", "1.0.0", "/c/ipam")
	if err != nil {
		t.Fatal(err)
	}
	_, cfg, ok := strings.Cut(m, "config: '")
	if !ok || !strings.Contains(m, "namespace: burst-multus") {
		t.Fatalf("manifest %q", m)
	}
	var c struct {
		Type, Bridge string
		IPAM         struct{ Type, Subnet, DataDir string }
	}
	if err := json.Unmarshal([]byte(strings.TrimSuffix(strings.TrimSpace(cfg), "'")), &c); err != nil {
		t.Fatalf("config of %q: %v", m, err)
	}
	if c.Type != "bridge" || c.Bridge != "mbr1" || c.IPAM.Type != "host-local" || c.IPAM.Subnet != "10.211.0.0/16" || c.IPAM.DataDir != "/c/ipam" {
		t.Errorf("config %+v", c)
	}
}

func TestCNINetworksReadsContainerdStatus(t *testing.T) {
	info := `{"PluginDirs":["/c/cni-bin"],"PluginConfDir":"/c/n1/cni/net.d","Prefix":"eth","Networks":[{"Config":{"Name":"cni-loopback","CNIVersion":"0.3.1"},"IFName":"lo"},{"Config":{"Name":"multus-cni-network","CNIVersion":"1.0.0","Source":"{}"},"IFName":"eth0"}]}`
	got, err := cniNetworks(info)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"cni-loopback", "multus-cni-network"}; !reflect.DeepEqual(got, want) {
		t.Errorf("networks %v, want %v", got, want)
	}
	if _, err := cniNetworks("not json"); err == nil {
		t.Error("no error for a status that is not JSON")
	}
}

// TestFirstCommandReportsMissingInterfaces runs the app's first command
// in a real shell (it only reads this netns' links): it names the
// interface that is not there, and none when all are.
func TestFirstCommandReportsMissingInterfaces(t *testing.T) {
	run := func(ifaces []string) string {
		cmd := strings.Replace(firstCommand(ifaces), "exec sleep 86400", "exit 0", 1)
		out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v: %s", cmd, err, out)
		}
		return string(out)
	}
	for _, tc := range []struct {
		ifaces, want []string
	}{
		{nil, nil},
		{[]string{"lo"}, nil},
		{[]string{"lo", "pnbenchnone0"}, []string{"pnbenchnone0"}},
	} {
		out := run(tc.ifaces)
		missing, ok := parseFirstCommand(out)
		if !ok || !slices.Equal(missing, tc.want) {
			t.Errorf("interfaces %v: output %q parsed as %v, %v; want %v", tc.ifaces, out, missing, ok, tc.want)
		}
	}
}

func TestParseFirstCommandWithoutItsLine(t *testing.T) {
	if _, ok := parseFirstCommand("something else\n"); ok {
		t.Error("a log without the first command's line parsed as reported")
	}
}
