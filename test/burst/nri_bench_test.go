//go:build bench

package burst

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/test/bench"
)

// nriDeployEnv deploys podnet holding pods through NRI (make deploy with
// deploy/overlays/hold-with-nri): the webhook with --hold-pods=nri, each
// agent serving the NRI plugin on its node's socket (NodeNRISocket in
// its node folder). checkNRIDeployed fails the bench when hack/deploy.sh
// deployed another mode.
var nriDeployEnv = []string{
	"HOLD_PODS=" + string(podnetv1.HoldNRI),
	"NODE_NRI_SOCKET=" + localcluster.NodeNRISocket,
}

// nriHookMetric is the agent's histogram of its NRI hooks' durations,
// labelled hook=RunPodSandbox|CreateContainer.
const nriHookMetric = "podnet_agent_nri_hook_seconds"

var nriHooks = []string{"RunPodSandbox", "CreateContainer"}

// checkNRIDeployed: the webhook holds pods through NRI and the agent
// serves the NRI plugin; otherwise the nri lines would measure another
// mode under its name.
func checkNRIDeployed(t *testing.T, cl *cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wh, err := cl.cs.AppsV1().Deployments("podnet-system").Get(ctx, "podnet-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("mode nri: the webhook's Deployment: %v", err)
	}
	ag, err := cl.cs.AppsV1().DaemonSets("podnet-system").Get(ctx, "podnet-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("mode nri: the agent's DaemonSet: %v", err)
	}
	want := []struct {
		who  string
		args []string
		flag string
	}{
		{"webhook", wh.Spec.Template.Spec.Containers[0].Args, "--hold-pods=" + string(podnetv1.HoldNRI)},
		{"agent", ag.Spec.Template.Spec.Containers[0].Args, "--nri-socket="},
	}
	for _, w := range want {
		if !slices.ContainsFunc(w.args, func(a string) bool { return strings.HasPrefix(a, w.flag) }) {
			t.Fatalf("mode nri: the %s runs with %q, without %s: hack/deploy.sh (given %v) did not deploy NRI mode", w.who, w.args, w.flag, nriDeployEnv)
		}
	}
}

// reportNRIHooks prints, for pods attached through NRI, the agent's NRI
// hook times p50 and p99 per hook, estimated within the buckets of
// nriHookMetric (as histogram_quantile does), and from the sandbox's
// creation until the bench saw networks-ready.
func reportNRIHooks(pfx string, v variant, r result) {
	for _, hook := range nriHooks {
		before := bench.Buckets(r.before, nriHookMetric, fmt.Sprintf("hook=%q", hook))
		after := bench.Buckets(r.after, nriHookMetric, fmt.Sprintf("hook=%q", hook))
		for _, q := range quantiles {
			x := bench.Quantile(before, after, q.q)
			if math.IsNaN(x) {
				fmt.Printf("burst: %s: no %s{hook=%q} observation: the agent's NRI plugin was not called\n", v.name, nriHookMetric, hook)
			}
			fmt.Printf("%sagent_nri_hook_%s_%s_%s %.1f ms\n", pfx, hook, v.name, q.name, x*1000)
		}
	}
	seen := durations(r.pods, func(p timeline) time.Time { return p.SandboxCreated }, func(p timeline) time.Time { return p.NetworksReady })
	for _, q := range quantiles {
		if len(seen) > 0 {
			fmt.Printf("%ssandbox_created_to_networks_ready_seen_%s_%s %s ms\n", pfx, v.name, q.name, ms(bench.Percentile(seen, q.q)))
		}
	}
}
