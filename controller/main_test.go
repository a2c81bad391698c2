package controller_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// Most integration tests share one API server (sharedEnv, testenv.Shared).
func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }

// sharedEnv is the test binary's one API server (testenv.Shared, whose
// cleanup deletes every profile, claim and policy a test made), returned
// once its watch cache shows none of an earlier test's either: the controller's
// informers start from that cache (resourceVersion "0") and would
// otherwise reconcile, and count, objects of a test that ended. A test
// that shares the server runs its controller only while it runs
// (startController stops it at its end) and keeps its pods and other
// namespaced objects in namespaces of its own (testNamespace).
func sharedEnv(t *testing.T) *testenv.Env {
	t.Helper()
	env := testenv.Shared(t)
	lists := []client.ObjectList{&v1alpha1.NetworkProfileList{}, &v1alpha1.IPClaimList{}, &v1alpha1.MACClaimList{},
		&v1alpha1.NodePolicyList{}, &mnp.MultiNetworkPolicyList{}}
	var left string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, l := range lists {
			if err := env.Client.List(ctx, l, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
				return false, err
			}
			if n := meta.LenList(l); n > 0 {
				left = fmt.Sprintf("%d of %T", n, l)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the shared API server's watch cache still shows %s of earlier tests: %v", left, err)
	}
	return env
}

var namespaceSeq atomic.Int64

// testNamespace creates a namespace for one test's objects, named base
// and a number no other test of the binary (nor an earlier run of the
// same test under -count) uses, with labels, and returns its name.
func testNamespace(t *testing.T, c client.Client, base string, labels map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", base, namespaceSeq.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}
