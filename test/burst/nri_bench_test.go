//go:build bench

package burst

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
)

// nriDeployEnv deploys podnet holding pods through NRI (make deploy with
// deploy/components/hold-with-nri): the webhook with --hold-pods=nri, each
// agent serving the NRI plugin on its node's socket (NodeNRISocket in
// its node folder, as every local install has), and Go's /debug/pprof
// on agentPprofPort, so that the bench splits the agent's CPU time by
// phase. checkNRIDeployed fails the bench when hack/deploy.sh deployed
// another mode.
var nriDeployEnv = []string{"NODE_HOLD=" + string(podnetv1.HoldNRI), "NODE_NRI_SOCKET=" + localcluster.NodeNRISocket,
	"NODE_AGENT_PPROF=:" + agentPprofPort}

// agentPprofPort is the port of the agent's /debug/pprof in the NRI
// modes, on the node's addresses (the agent runs in the node's network
// namespace, the local cluster's own).
const agentPprofPort = "6064"

// waitDeployEnv deploys podnet holding every pod with the wait init
// container (deploy/components/hold-with-wait-container), whatever the
// nodes' runtimes offer: the default, auto, would pick NRI on a cluster
// whose runtimes enforce it.
var waitDeployEnv = []string{"NODE_HOLD=" + string(podnetv1.HoldWaitInitContainer)}

// checkNRIDeployed: the webhook holds pods through NRI and the agent
// serves the NRI plugin; otherwise the nri lines would measure another
// mode under its name. The agent serves /debug/pprof too: its arms are
// profiled.
func checkNRIDeployed(t *testing.T, cl *cluster) {
	checkHoldDeployed(t, cl, podnetv1.HoldNRI, nriDeployEnv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ag, err := cl.cs.AppsV1().DaemonSets("podnet-system").Get(ctx, "podnet-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agent's DaemonSet: %v", err)
	}
	flag := "--pprof-bind-address=:" + agentPprofPort
	if args := ag.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, flag) {
		t.Fatalf("the agent runs with %q, without %s: hack/deploy.sh (given %v) did not serve its profiles", args, flag, nriDeployEnv)
	}
	cl.pprofPort = agentPprofPort
}

// checkWaitDeployed: the webhook holds every pod with the wait container,
// not by auto's choice, which on this cluster could be NRI.
func checkWaitDeployed(t *testing.T, cl *cluster) {
	checkHoldDeployed(t, cl, podnetv1.HoldWaitInitContainer, waitDeployEnv)
}

// checkHoldDeployed fails the bench unless the webhook runs --hold-pods=mode
// and the agent serves the NRI plugin (every install's does).
func checkHoldDeployed(t *testing.T, cl *cluster, mode podnetv1.HoldMode, env []string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wh, err := cl.cs.AppsV1().Deployments("podnet-system").Get(ctx, "podnet-webhook", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("mode %s: the webhook's Deployment: %v", mode, err)
	}
	ag, err := cl.cs.AppsV1().DaemonSets("podnet-system").Get(ctx, "podnet-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("mode %s: the agent's DaemonSet: %v", mode, err)
	}
	want := []struct {
		who  string
		args []string
		flag string
	}{
		{"webhook", wh.Spec.Template.Spec.Containers[0].Args, "--hold-pods=" + string(mode)},
		{"agent", ag.Spec.Template.Spec.Containers[0].Args, "--nri-socket="},
	}
	for _, w := range want {
		if !slices.ContainsFunc(w.args, func(a string) bool { return strings.HasPrefix(a, w.flag) }) {
			t.Fatalf("mode %s: the %s runs with %q, without %s: hack/deploy.sh (given %v) did not deploy this mode", mode, w.who, w.args, w.flag, env)
		}
	}
}
