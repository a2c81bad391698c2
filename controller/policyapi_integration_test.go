package controller_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/netpolicy"
	"podnet.io/podnet/test/testenv"
)

// multiNetworkPolicyCRD is the CRD podnet installs where it is absent.
const multiNetworkPolicyCRD = "../deploy/crd/multinetworkpolicy/k8s.cni.cncf.io_multinetworkpolicies.yaml"

// TestIntegrationNodePoliciesOnceThePolicyAPIAppears: a controller that
// started before the MultiNetworkPolicy CRD was installed writes the
// floors alone, and enforces tenants' policies once the CRD is there,
// without a restart.
func TestIntegrationNodePoliciesOnceThePolicyAPIAppears(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	data, err := os.ReadFile(multiNetworkPolicyCRD)
	if err != nil {
		t.Fatal(err)
	}
	crd := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			t.Fatal(err)
		}
		return u
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	served := func(want bool) {
		t.Helper()
		testenv.Eventually(t, time.Minute, fmt.Sprintf("MultiNetworkPolicies served: %v", want), func(context.Context) error {
			list, err := dc.ServerResourcesForGroupVersion(mnp.SchemeGroupVersion.String())
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if got := list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "multinetworkpolicies" }); got != want {
				return fmt.Errorf("served: %v", got)
			}
			return nil
		})
	}
	if err := c.Delete(ctx, crd()); err != nil {
		t.Fatal(err)
	}
	// The tests after this one share the server, and its CRD.
	t.Cleanup(func() {
		if err := c.Create(ctx, crd()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Error(err)
		}
		served(true)
	})
	served(false)

	ns := testNamespace(t, c, "npol-late", nil)
	floorNet, policyNet, node := ns+"-floor", ns+"-mnp", ns+"-n1"
	prof := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
		{Name: floorNet, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-late-f"}, PolicyFloor: &v1alpha1.PolicyFloor{Ingress: &v1alpha1.PolicyScope{SameNamespace: true}}},
		{Name: policyNet, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-late-m"}},
	}}}
	if err := c.Create(ctx, prof); err != nil {
		t.Fatal(err)
	}
	startController(t, env, time.Minute)
	names := map[string]string{}
	for i, app := range []string{"web", "db"} {
		p := policyPod{ns: ns, name: app, node: node, profile: prof.Name, labels: map[string]string{"app": app},
			nets: []string{floorNet, policyNet}, addrs: []string{fmt.Sprintf("10.72.0.%d", i+1), fmt.Sprintf("10.73.0.%d", i+1)}}
		names[p.create(t, c)] = p.name
	}
	probes := map[string][]probe{"net1": {{"10.72.0.1", 80}, {"10.72.0.2", 80}}, "net2": {{"10.73.0.1", 80}, {"10.73.0.2", 80}}}
	expect := func(what string, want map[string]string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, what, func(ctx context.Context) error {
			got, err := nodePolicies(ctx, c, []string{node}, names, probes)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got[node], want) {
				return fmt.Errorf("NodePolicy\n got %v\nwant %v", got[node], want)
			}
			return nil
		})
	}
	floor := "in 10.72.0.1:80 10.72.0.2:80 out -"
	expect("the floor alone", map[string]string{"web/net1": floor, "db/net1": floor})

	if err := c.Create(ctx, crd()); err != nil {
		t.Fatal(err)
	}
	served(true)
	deny := &mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-deny", Annotations: map[string]string{netpolicy.PolicyForAnnotation: policyNet}},
		Spec: mnp.MultiNetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}, PolicyTypes: []mnp.MultiPolicyType{mnp.PolicyTypeIngress}}}
	// The client's mapper may still hold the group's absence.
	testenv.Eventually(t, time.Minute, "the policy created", func(ctx context.Context) error {
		return client.IgnoreAlreadyExists(c.Create(ctx, deny.DeepCopy()))
	})
	expect("the policy, once its API is served", map[string]string{"web/net1": floor, "db/net1": floor, "db/net2": "in none out -"})
}
