package agent_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/simnode"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationAgentWithoutNodePolicies: on an API server that serves
// no NodePolicies (the CRD is not installed yet) the agent starts and
// attaches all the same.
func TestIntegrationAgentWithoutNodePolicies(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	crd.SetName("nodepolicies." + v1alpha1.GroupName)
	if err := env.Client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "NodePolicies no longer served", func(context.Context) error {
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "nodepolicies" }) {
			return fmt.Errorf("still served")
		}
		return nil
	})

	_, pod := runPod(t, env, simnode.Options{})
	testenv.Eventually(t, time.Minute, "pod attached", func(ctx context.Context) error {
		var p corev1.Pod
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1alpha1.NetworksReadyCondition && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not attached yet: %v", p.Status.Conditions)
	})
}

// TestIntegrationAgentFollowsItsNodePolicy: the agent applies a pod again
// when its node's NodePolicy gives its interface a policy or takes it
// away, and when its network's profile sets a floor; another node's
// NodePolicy costs it nothing.
func TestIntegrationAgentFollowsItsNodePolicy(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	// No resync within the test: every Apply after the attach comes from
	// a watch.
	n, pod := runPod(t, env, simnode.Options{Resync: time.Hour})
	uid := string(pod.UID)
	testenv.Eventually(t, time.Minute, "pod attached", func(context.Context) error {
		if n.Dataplane.Attached() != 1 {
			return fmt.Errorf("not attached yet")
		}
		return nil
	})
	isolated := func(want ...string) func(context.Context) error {
		return func(context.Context) error {
			if got := n.Dataplane.Isolated(uid); !slices.Equal(got, want) {
				return fmt.Errorf("isolated interfaces %v, want %v", got, want)
			}
			return nil
		}
	}
	if err := isolated()(ctx); err != nil {
		t.Fatal(err)
	}
	policy := func(node string) *v1alpha1.NodePolicy {
		return &v1alpha1.NodePolicy{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.NodePolicySpec{
			Peers: []v1alpha1.PeerList{{Name: "p0", Prefixes: "10.0.0.1/32"}}, Sets: []v1alpha1.PolicySet{{Name: "s0", Allow: []string{"p0 tcp 80"}}},
			Interfaces: []v1alpha1.InterfacePolicy{{PodUID: uid, Interface: "net1", Ingress: "s0"}},
		}}
	}
	applies := n.Dataplane.Applies()
	if err := env.Client.Create(ctx, policy("node-b")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if got := n.Dataplane.Applies(); got != applies {
		t.Fatalf("another node's NodePolicy made the agent apply %d times", got-applies)
	}
	own := policy("node-a")
	if err := env.Client.Create(ctx, own); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "net1 isolated by the NodePolicy", isolated("net1"))
	if err := env.Client.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "net1 open again", isolated())

	var profile v1alpha1.NetworkProfile
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "demo"}, &profile); err != nil {
		t.Fatal(err)
	}
	profile.Spec.Networks[0].PolicyFloor = &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}
	if err := env.Client.Update(ctx, &profile); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "net1 isolated by its network's floor", isolated("net1"))
}

// runPod starts the agent of node-a once it is ready, and a pod on node-a
// approved for network data.
func runPod(t *testing.T, env *testenv.Env, o simnode.Options) (*simnode.Node, *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	n, ap := startNode(t, env, "node-a", o)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := n.WaitReady(waitCtx, time.Now()); err != nil {
		t.Fatal(err)
	}
	pod := simnode.NewPod("default", "p1", "node-a")
	if err := ap.Approve(pod, "demo", "data", "192.168.100.0/24"); err != nil {
		t.Fatal(err)
	}
	if err := (simnode.Kubelet{Client: env.Client}).Run(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return n, pod
}
