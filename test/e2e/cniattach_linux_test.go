package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/hack/localcluster"
)

// attachCluster is the one-node cluster whose containerd chains podnet's
// CNI plugin and whose podnet is deployed attaching at sandbox setup; named
// after clusterName, so the two suites never tear down each other's.
var attachCluster = clusterName + "-at"

// firstCommand is what the app container runs first: it records whether
// net1 was there, then sleeps.
const firstCommand = `if ip link show net1 >/dev/null 2>&1; then echo FIRST-NET1-PRESENT; else echo FIRST-NET1-MISSING; fi; exec sleep 86400`

// TestRootE2EAttachAtSandboxSetup: on a local cluster whose nodes chain
// podnet's CNI plugin (localcluster AttachAtSandboxSetup, deployed through
// make deploy with deploy/components/attach-at-sandbox-setup), a pod with a
// network gets no init container, its app's first command sees net1, the
// pod becomes Ready with its address, and a pod without networks starts
// as usual.
func TestRootE2EAttachAtSandboxSetup(t *testing.T) {
	s := setUpWith(t, localcluster.Options{Name: attachCluster, Nodes: 1, AttachAtSandboxSetup: true})
	s.testAdmin(t)
	s.checkPluginInstalled(t)
	node := attachCluster + "-n1"
	s.apply(t, firstCommandDeployment(t, "attached", node, "data"))
	s.apply(t, firstCommandDeployment(t, "plain", node, ""))
	pods := s.waitPodsWith(t, "attached", 1, "net1")
	p := pods[0]
	if len(p.Spec.InitContainers) != 0 {
		t.Errorf("pod %s has init containers %v, want none", p.Name, p.Spec.InitContainers)
	}
	s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
	eventually(t, 2*time.Minute, "the plain pod Ready", func(ctx context.Context) error {
		plain, err := s.pods(ctx, "plain")
		if err != nil {
			return err
		}
		if len(plain) != 1 || !ready(plain[0]) {
			return fmt.Errorf("%d plain pods, not Ready", len(plain))
		}
		return nil
	})
}

// checkPluginInstalled: the agent's install-cni init container ran and
// succeeded on every node.
func (s *suite) checkPluginInstalled(t *testing.T) {
	t.Helper()
	var pods corev1.PodList
	if err := s.client.List(context.Background(), &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-agent"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatal("no agent pod")
	}
	for _, p := range pods.Items {
		ok := false
		for _, st := range p.Status.InitContainerStatuses {
			ok = ok || (st.Name == "install-cni" && st.State.Terminated != nil && st.State.Terminated.ExitCode == 0)
		}
		if !ok {
			t.Errorf("agent pod %s: install-cni did not succeed: %+v", p.Name, p.Status.InitContainerStatuses)
		}
	}
}

// firstCommandDeployment is deployment() of one pod with firstCommand as
// the app's command; networks "" asks for none.
func firstCommandDeployment(t *testing.T, name, node, networks string) string {
	t.Helper()
	const sleep = `command: ["sleep", "86400"]`
	d := deployment(name, node, networks, 1)
	if !strings.Contains(d, sleep) {
		t.Fatalf("deployment() no longer runs %s", sleep)
	}
	return strings.Replace(d, sleep, fmt.Sprintf("command: [\"sh\", \"-c\", %q]", firstCommand), 1)
}
