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

// nriFolders are the agent's nri volume's node folder and its mount path.
func nriFolders(t *testing.T, agent map[string]any) (hostPath, mountPath string) {
	t.Helper()
	for _, v := range agent["volumes"].([]any) {
		if v := v.(map[string]any); v["name"] == "nri" {
			hostPath = v["hostPath"].(map[string]any)["path"].(string)
		}
	}
	for _, m := range containerOf(t, agent, "agent")["volumeMounts"].([]any) {
		if m := m.(map[string]any); m["name"] == "nri" {
			mountPath = m["mountPath"].(string)
		}
	}
	return hostPath, mountPath
}
