package burst

import (
	"encoding/json"
	"fmt"
	"strings"
)

// multusConfName is the node's CNI configuration file that makes Multus
// the primary plugin: containerd reads only the first file of its CNI
// folder by name, and the local cluster's own is 10-pn.conflist.
const multusConfName = "00-multus.conf"

// multusNetworkName is the name of the Multus configuration, by which the
// bench sees that containerd loaded it.
const multusNetworkName = "multus-cni-network"

// multusPaths are where one node's Multus thin plugin reads and writes:
// all inside the cluster's folder, never the machine's defaults
// (/var/lib/cni/multus, /etc/cni/multus/net.d, /opt/cni/bin).
type multusPaths struct {
	Kubeconfig string // reaches the API server from the node's netns
	BinDir     string // the delegates' plugins
	CNIDir     string // Multus' cache of delegates and results
	ConfDir    string // Multus' own configuration folder (empty)
	LogFile    string
}

// multusConf is the Multus thin plugin's configuration delegating the
// pod's first interface to the node's own network (delegate, the
// conflist containerd used before) and every network of a pod's
// k8s.v1.cni.cncf.io/networks annotation to its
// NetworkAttachmentDefinition, read through the API server.
func multusConf(delegate []byte, p multusPaths) ([]byte, error) {
	var d map[string]any
	if err := json.Unmarshal(delegate, &d); err != nil {
		return nil, fmt.Errorf("the node's CNI configuration to delegate to: %w", err)
	}
	for _, f := range []struct{ name, v string }{{"kubeconfig", p.Kubeconfig}, {"binDir", p.BinDir}, {"cniDir", p.CNIDir}, {"confDir", p.ConfDir}, {"logFile", p.LogFile}} {
		if f.v == "" {
			return nil, fmt.Errorf("multus configuration: %s is empty", f.name)
		}
	}
	return json.MarshalIndent(map[string]any{
		"cniVersion": d["cniVersion"],
		"name":       multusNetworkName,
		"type":       "multus",
		"kubeconfig": p.Kubeconfig,
		"binDir":     p.BinDir,
		"cniDir":     p.CNIDir,
		"confDir":    p.ConfDir,
		"logFile":    p.LogFile,
		"logLevel":   "error",
		"delegates":  []any{d},
	}, "", "  ")
}

// nad is one NetworkAttachmentDefinition of the Multus arms: the
// reference bridge plugin with host-local IPAM.
type nad struct {
	Name, Bridge, Subnet string
}

// nadManifest is n in namespace as YAML; host-local keeps its leases in
// dataDir.
func nadManifest(n nad, namespace, cniVersion, dataDir string) (string, error) {
	config, err := json.Marshal(map[string]any{
		"cniVersion": cniVersion,
		"name":       n.Name,
		"type":       "bridge",
		"bridge":     n.Bridge,
		"ipam":       map[string]any{"type": "host-local", "subnet": n.Subnet, "dataDir": dataDir},
	})
	if err != nil {
		return "", fmt.Errorf("network attachment definition %q: %w", n.Name, err)
	}
	return fmt.Sprintf(`apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: %s, namespace: %s}
spec:
  config: '%s'
`, n.Name, namespace, config), nil
}

// cniNetworks are the names of the CNI networks a containerd has loaded,
// from the "cniconfig" entry of its verbose CRI Status.
func cniNetworks(info string) ([]string, error) {
	var cfg struct {
		Networks []struct {
			Config struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(info), &cfg); err != nil {
		return nil, fmt.Errorf("containerd's cniconfig status: %w", err)
	}
	var out []string
	for _, n := range cfg.Networks {
		out = append(out, n.Config.Name)
	}
	return out, nil
}

// firstMarker starts the line the app's first command prints: the
// interfaces it did not find, space-separated, after it.
const firstMarker = "FIRST-MISSING:"

// firstCommand is what the app container runs first: it prints which of
// ifaces its network namespace lacks (firstMarker), then sleeps. Every
// arm runs it, so their app starts cost the same.
func firstCommand(ifaces []string) string {
	if len(ifaces) == 0 {
		return "echo " + firstMarker + "; exec sleep 86400"
	}
	return fmt.Sprintf(`missing=; for i in %s; do ip link show "$i" >/dev/null 2>&1 || missing="$missing $i"; done; echo "%s$missing"; exec sleep 86400`,
		strings.Join(ifaces, " "), firstMarker)
}

// parseFirstCommand reads firstCommand's line from an app's log: the
// interfaces missing when it started, and false when the line is not
// there.
func parseFirstCommand(log string) (missing []string, ok bool) {
	for _, l := range strings.Split(log, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(l), firstMarker); found {
			return strings.Fields(rest), true
		}
	}
	return nil, false
}
