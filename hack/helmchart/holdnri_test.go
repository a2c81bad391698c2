package main

import (
	"strings"
	"testing"
)

// TestChartHoldPodsWithNRIFollowsValues: holding with NRI, the agent
// connects to nri.socket and mounts its folder at the same path, and the
// webhook holds pods with NRI; no other mode adds the socket.
func TestChartHoldPodsWithNRIFollowsValues(t *testing.T) {
	got := render(t, Namespace, "holdPods=nri", "nri.socket=/run/containerd/nri/nri.sock")
	agent := podSpecOf(t, got["DaemonSet/podnet-system/podnet-agent"])
	if args := argsOf(t, agent, "agent"); !strings.Contains(args, "--nri-socket=/run/containerd/nri/nri.sock") {
		t.Errorf("agent args %s lack the socket value", args)
	}
	var hostPath, mountPath string
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
	if hostPath != "/run/containerd/nri" || mountPath != "/run/containerd/nri" {
		t.Errorf("nri folder on the node %q, in the agent %q; want /run/containerd/nri for both", hostPath, mountPath)
	}
	if args := argsOf(t, podSpecOf(t, got["Deployment/podnet-system/podnet-webhook"]), "webhook"); !strings.Contains(args, "--hold-pods=nri") {
		t.Errorf("webhook args %s do not hold pods with NRI", args)
	}
	for _, mode := range []string{"waitInitContainer", "attachAtSandboxSetup"} {
		if args := argsOf(t, podSpecOf(t, render(t, Namespace, "holdPods="+mode)["DaemonSet/podnet-system/podnet-agent"]), "agent"); strings.Contains(args, "--nri-socket") {
			t.Errorf("holdPods=%s: agent args %s connect to NRI", mode, args)
		}
	}
}
