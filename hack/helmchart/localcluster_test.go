package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"podnet.io/podnet/hack/localcluster"
)

// TestChartOnTheLocalCluster renders the chart with the values file a
// local cluster writes at its bring-up (localcluster.HelmValues), in each
// hold mode it can have: every folder the agent mounts from the node is
// under the cluster's folder, or one the machine shares with every
// cluster on purpose (pod netns pins, the kernel's net sysctls), never the
// machine's own runtime, NRI, hook or kubelet folders; and the agent
// connects to its node's sockets there and serves the DRA kubelet plugin
// to its node's kubelet.
func TestChartOnTheLocalCluster(t *testing.T) {
	const dir = "/srv/podnet/_output/cluster/demo"
	shared := map[string]bool{"/run/netns": true, "/proc/sys/net": true}
	for _, attach := range []bool{false, true} {
		values, err := localcluster.HelmValues(dir, attach, "")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), localcluster.HelmValuesFile)
		if err := os.WriteFile(file, values, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := renderArgs(t, Namespace, "-f", file)
		if err != nil {
			t.Fatal(err)
		}
		agent := podSpecOf(t, byID(t, out)["DaemonSet/podnet-system/podnet-agent"])
		for _, v := range agent["volumes"].([]any) {
			v := v.(map[string]any)
			hp, ok := v["hostPath"].(map[string]any)
			if !ok {
				continue
			}
			if p := hp["path"].(string); !shared[p] && p != dir && !strings.HasPrefix(p, dir+"/") {
				t.Errorf("attach at sandbox setup %v: the agent's volume %s is the machine's %s", attach, v["name"], p)
			}
		}
		args := argsOf(t, agent, "agent")
		for _, want := range []string{
			"--cri-endpoint=unix:///run/containerd/$(NODE_NAME)/" + localcluster.NodeCRISocket,
			"--nri-socket=/run/podnet-nodes/$(NODE_NAME)/" + localcluster.NodeNRISocket,
			"--nri-hook=" + dir + "/podnet-hook/podnet-wait",
			"--dra-kubelet-dir=" + dir + "/$(NODE_NAME)/" + localcluster.NodeKubeletDir,
		} {
			if !strings.Contains(args, want) {
				t.Errorf("attach at sandbox setup %v: agent args %s lack %s", attach, args, want)
			}
		}
		if h, m := folders(t, agent, "cri"); h != dir || m != "/run/containerd" {
			t.Errorf("cri folder on the node %q, in the agent %q; want %s at /run/containerd", h, m, dir)
		}
		// The kubelet dials the plugin's socket at the path the agent
		// names: the same path in the agent as on the machine.
		if h, m := folders(t, agent, "kubelet-dra"); h != dir || m != dir {
			t.Errorf("kubelet folders on the node %q, in the agent %q; want %s at the same path", h, m, dir)
		}
		if got := strings.Contains(args, "--cni-socket=/run/podnet/$(NODE_NAME)/"+localcluster.NodeCNISocket); got != attach {
			t.Errorf("attach at sandbox setup %v: agent args %s", attach, args)
		}
	}
}
