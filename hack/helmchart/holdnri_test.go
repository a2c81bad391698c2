package main

import (
	"strings"
	"testing"
)

// TestChartHoldPodsWithNRIFollowsValues: holding with NRI, the agent
// connects to nri.socket and mounts its folder at the same path, and the
// webhook holds pods with NRI; every other mode connects the agent too
// (auto, the default, probes the runtime through it), and the default
// webhook has no --hold-pods (its own default is auto).
func TestChartHoldPodsWithNRIFollowsValues(t *testing.T) {
	got := render(t, Namespace, "holdPods=nri", "nri.socket=/run/containerd/nri/nri.sock")
	agent := podSpecOf(t, got["DaemonSet/podnet-system/podnet-agent"])
	if args := argsOf(t, agent, "agent"); !strings.Contains(args, "--nri-socket=/run/containerd/nri/nri.sock") {
		t.Errorf("agent args %s lack the socket value", args)
	}
	if hostPath, mountPath := nriFolders(t, agent); hostPath != "/run/containerd/nri" || mountPath != "/run/containerd/nri" {
		t.Errorf("nri folder on the node %q, in the agent %q; want /run/containerd/nri for both", hostPath, mountPath)
	}
	if args := argsOf(t, podSpecOf(t, got["Deployment/podnet-system/podnet-webhook"]), "webhook"); !strings.Contains(args, "--hold-pods=nri") {
		t.Errorf("webhook args %s do not hold pods with NRI", args)
	}
	// A node folder per node: the folders as given, the socket as given.
	local := podSpecOf(t, render(t, Namespace, "nri.socket=/run/nodes/$(NODE_NAME)/nri.sock", "nri.hostDir=/srv/cluster", "nri.mountDir=/run/nodes")["DaemonSet/podnet-system/podnet-agent"])
	if args := argsOf(t, local, "agent"); !strings.Contains(args, "--nri-socket=/run/nodes/$(NODE_NAME)/nri.sock") {
		t.Errorf("agent args %s lack the socket value", args)
	}
	if h, m := nriFolders(t, local); h != "/srv/cluster" || m != "/run/nodes" {
		t.Errorf("nri folder on the node %q, in the agent %q; want /srv/cluster and /run/nodes", h, m)
	}
	for _, mode := range []string{"auto", "waitInitContainer", "attachAtSandboxSetup"} {
		objs := render(t, Namespace, "holdPods="+mode, "nri.socket=/run/containerd/nri/nri.sock")
		if args := argsOf(t, podSpecOf(t, objs["DaemonSet/podnet-system/podnet-agent"]), "agent"); !strings.Contains(args, "--nri-socket=/run/containerd/nri/nri.sock") {
			t.Errorf("holdPods=%s: agent args %s lack the socket value", mode, args)
		}
		args := argsOf(t, podSpecOf(t, objs["Deployment/podnet-system/podnet-webhook"]), "webhook")
		if hold := strings.Contains(args, "--hold-pods"); hold != (mode != "auto") || (hold && !strings.Contains(args, "--hold-pods="+mode)) {
			t.Errorf("holdPods=%s: webhook args %s", mode, args)
		}
	}
}

// TestChartWaitHookFollowsItsValue: in every hold mode the agent installs
// its wait hook at nri.hook, its folder mounted at the same path on the
// node and in the agent (the runtime runs the hook from the path the agent
// names), and nothing else of the node's /opt/podnet/bin is mounted.
func TestChartWaitHookFollowsItsValue(t *testing.T) {
	for _, mode := range []string{"auto", "nri", "waitInitContainer", "attachAtSandboxSetup"} {
		for _, c := range []struct{ set, path, dir string }{
			{"", "/opt/podnet/bin/podnet-wait", "/opt/podnet/bin"},
			{"nri.hook=/srv/cluster/podnet-hook/podnet-wait", "/srv/cluster/podnet-hook/podnet-wait", "/srv/cluster/podnet-hook"},
		} {
			set := []string{"holdPods=" + mode, "namespace.create=true"}
			if c.set != "" {
				set = append(set, c.set)
			}
			agent := podSpecOf(t, render(t, Namespace, set...)["DaemonSet/podnet-system/podnet-agent"])
			if args := argsOf(t, agent, "agent"); strings.Count(args, "--nri-hook=") != 1 || !strings.Contains(args, "--nri-hook="+c.path) {
				t.Errorf("holdPods=%s %s: agent args %s: want one --nri-hook=%s", mode, c.set, args, c.path)
			}
			if h, m := folders(t, agent, "nri-hook"); h != c.dir || m != c.dir {
				t.Errorf("holdPods=%s %s: hook folder on the node %q, in the agent %q; want %s for both", mode, c.set, h, m, c.dir)
			}
		}
	}
}

// nriFolders are the agent's nri volume's node folder and its mount path.
func nriFolders(t *testing.T, agent map[string]any) (hostPath, mountPath string) {
	t.Helper()
	return folders(t, agent, "nri")
}

// folders are the node folder of the agent's hostPath volume name and its
// mount path in the agent container ("" for one not there); a volume
// mounted twice fails the test.
func folders(t *testing.T, agent map[string]any, name string) (hostPath, mountPath string) {
	t.Helper()
	for _, v := range agent["volumes"].([]any) {
		if v := v.(map[string]any); v["name"] == name {
			hostPath = v["hostPath"].(map[string]any)["path"].(string)
		}
	}
	for _, m := range containerOf(t, agent, "agent")["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["name"] == name {
			if mountPath != "" {
				t.Errorf("volume %s mounted at %s and at %s", name, mountPath, m["mountPath"])
			}
			mountPath = m["mountPath"].(string)
		}
	}
	return hostPath, mountPath
}
