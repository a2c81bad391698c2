package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"podnet.io/podnet/hack/localcluster"
)

// checkNodeRuntime fails the suite when a node's kubelet reports another
// container runtime than the one asked for (PODNET_E2E_RUNTIME), so a run
// meant for containerd 2 or CRI-O never passes on containerd 1.6.
func checkNodeRuntime(t *testing.T, c *localcluster.Cluster) {
	t.Helper()
	_, want, err := localcluster.RuntimeVersions(c.Runtime)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		// containerd 2 names its version "v2.x.y": the "v" is dropped.
		got := n.Status.NodeInfo.ContainerRuntimeVersion
		if !strings.HasPrefix(strings.Replace(got, "://v", "://", 1), want) {
			t.Fatalf("node %s runs %q, want %s… (runtime %q)", n.Name, got, want, c.Runtime)
		}
		t.Logf("node %s runs %s", n.Name, got)
	}
}
