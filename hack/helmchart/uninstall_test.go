package main

import (
	"slices"
	"strings"
	"testing"
)

// TestChartUninstallHookRunsTheUninstallStep checks that helm uninstall
// first runs `podnet-controller uninstall` as a pre-delete hook (so the
// agents clean their nodes while they and their RBAC still exist), with an
// identity that can touch only the agent's DaemonSet, the namespace's pods
// and the Nodes, and that uninstall.cleanNodes=false leaves it out.
func TestChartUninstallHookRunsTheUninstallStep(t *testing.T) {
	got := render(t, "netops", "uninstall.timeout=7m")
	for _, id := range uninstallHook("netops") {
		o, ok := got[id]
		if !ok {
			t.Fatalf("the chart makes no %s", id)
		}
		md, _ := o["metadata"].(map[string]any)
		ann, _ := md["annotations"].(map[string]any)
		if ann["helm.sh/hook"] != "pre-delete" {
			t.Errorf("%s: helm.sh/hook %v, want pre-delete", id, ann["helm.sh/hook"])
		}
		// The identity and its RBAC never outlive the hook; a failed
		// Job stays for its logs.
		want := "before-hook-creation,hook-succeeded,hook-failed"
		if strings.HasPrefix(id, "Job/") {
			want = "before-hook-creation,hook-succeeded"
		}
		if ann["helm.sh/hook-delete-policy"] != want {
			t.Errorf("%s: helm.sh/hook-delete-policy %v, want %s", id, ann["helm.sh/hook-delete-policy"], want)
		}
	}
	job := containerOf(t, podSpecOf(t, got["Job/netops/podnet-uninstall"]), "uninstall")
	var cmd []string
	for _, a := range append(job["command"].([]any), job["args"].([]any)...) {
		cmd = append(cmd, a.(string))
	}
	want := []string{"/usr/local/bin/podnet-controller", "uninstall", "--namespace=netops", "--daemonset=podnet-agent", "--timeout=7m"}
	if !slices.Equal(cmd, want) {
		t.Errorf("hook runs %q, want %q", cmd, want)
	}
	for id, wantRules := range map[string]string{
		"Role/netops/podnet-uninstall":         "apps/daemonsets[podnet-agent]:get,patch /pods[]:list",
		"ClusterRole//podnet-uninstall-netops": "/nodes[]:list,patch",
	} {
		if r := rulesOf(got[id]); r != wantRules {
			t.Errorf("%s grants %q, want %q", id, r, wantRules)
		}
	}
	for id := range render(t, "netops", "uninstall.cleanNodes=false") {
		// The policy that narrows the hook's Node patches comes from
		// deploy/ and is installed either way.
		if strings.Contains(id, "podnet-uninstall") && !strings.HasSuffix(id, "/podnet-uninstall-nodes") {
			t.Errorf("uninstall.cleanNodes=false still makes %s", id)
		}
	}
}

// rulesOf writes an RBAC object's rules as group/resources[names]:verbs.
func rulesOf(o object) string {
	var out []string
	rules, _ := o["rules"].([]any)
	for _, r := range rules {
		m := r.(map[string]any)
		out = append(out, join(m["apiGroups"])+"/"+join(m["resources"])+"["+join(m["resourceNames"])+"]:"+join(m["verbs"]))
	}
	return strings.Join(out, " ")
}

func join(v any) string {
	var s []string
	l, _ := v.([]any)
	for _, x := range l {
		s = append(s, x.(string))
	}
	return strings.Join(s, ",")
}
