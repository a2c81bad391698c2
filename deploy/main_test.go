package deploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// The policy tests share one API server (sharedPolicies).
func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }

// installed is the shared API server sharedPolicies installed its setup on.
var installed struct {
	sync.Mutex
	env *testenv.Env
}

// sharedPolicies returns the test binary's shared API server
// (testenv.Shared) with podnet's namespace, the opted-in tenant namespace
// t1, deploy/policies installed, and user "tenant" granted what a
// namespace owner has (grantTenant): installed by the first test that asks
// and found in place by the others. A server of its own cost each test
// 5 s of its 6 to 8.
//
// The tests name their objects alike, so when a test ends sweep deletes
// what it made of the swept kinds. A test deletes the other objects it
// makes (deleteAtEnd: Leases, grants of its own; the agent's and the
// controller's grants stay for the next test that asks, grantAgent), puts
// back what it changes of the setup (restoreAtEnd), and lets the API
// server name the namespaces it makes (GenerateName): a deleted namespace
// stays, with no controller to empty it.
func sharedPolicies(t *testing.T) *testenv.Env {
	t.Helper()
	env := testenv.Shared(t)
	installed.Lock()
	defer installed.Unlock()
	if installed.env != env {
		installPolicies(t, env.Client)
		installed.env = env
	}
	t.Cleanup(func() {
		if err := sweep(env.Client); err != nil {
			t.Errorf("shared API server: %v", err)
		}
	})
	return env
}

// installPolicies creates namespaces podnet-system and t1 (opted in),
// the objects of deploy/policies, and the tenant's grants.
func installPolicies(t *testing.T, admin client.Client) {
	t.Helper()
	ctx := context.Background()
	for _, ns := range []string{"podnet-system", "t1"} {
		labels := map[string]string{}
		if ns == "t1" {
			labels = map[string]string{v1alpha1.EnabledLabel: "true", "podnet.io/tenant": "telco"}
		}
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range build(t, "policies") {
		if err := admin.Create(ctx, &o); err != nil {
			t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	grantTenant(t, admin)
}

// swept are the kinds of the objects tests make under names they all use:
// nodes node-a and node-b, pods and claims in t1. sweep deletes those of
// the cluster-scoped kinds and those of the namespaced ones in t1 (a
// namespace a test makes is its own).
var swept = []client.Object{
	&corev1.Node{},
	&resourceapi.DeviceClass{},
	&resourceapi.ResourceSlice{},
	&corev1.Pod{},
	&eventsv1.Event{},
	&resourceapi.ResourceClaim{},
	&resourceapi.ResourceClaimTemplate{},
}

// sweep deletes the objects of the swept kinds, on one DeleteAllOf request
// per kind. None carries a finalizer and pods go without a grace period (no
// kubelet confirms their end), so each is gone when its request returns.
func sweep(c client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, o := range swept {
		namespaced, err := c.IsObjectNamespaced(o)
		if err != nil {
			errs = append(errs, fmt.Errorf("scope of %T: %w", o, err))
			continue
		}
		opts := []client.DeleteAllOfOption{client.GracePeriodSeconds(0)}
		if namespaced {
			opts = append(opts, client.InNamespace("t1"))
		}
		if err := c.DeleteAllOf(ctx, o, opts...); err != nil {
			errs = append(errs, fmt.Errorf("delete every %T: %w", o, err))
		}
	}
	return errors.Join(errs...)
}

// ensure creates o, or writes it over the object of its name.
func ensure(ctx context.Context, c client.Client, o client.Object) error {
	switch err := c.Create(ctx, o); {
	case apierrors.IsAlreadyExists(err):
		return overwrite(ctx, c, o)
	case err != nil:
		return fmt.Errorf("create %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// overwrite writes o over the object of its name, whatever that one's
// resourceVersion.
func overwrite(ctx context.Context, c client.Client, o client.Object) error {
	cur := o.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return fmt.Errorf("read %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
	}
	o.SetResourceVersion(cur.GetResourceVersion())
	if err := c.Update(ctx, o); err != nil {
		return fmt.Errorf("write %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// deleteAtEnd deletes objs, as c, when the test ends, those already gone
// aside: the next test on the shared API server may make them again.
func deleteAtEnd(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	t.Cleanup(func() {
		for _, o := range objs {
			if err := client.IgnoreNotFound(c.Delete(context.Background(), o)); err != nil {
				t.Errorf("delete %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
			}
		}
	})
}

// restoreAtEnd reads objs, as c, and writes them back as they are now
// when the test ends: they belong to the shared API server's setup, which
// the tests after this one expect as installed.
func restoreAtEnd(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		if err := c.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range objs {
			if err := overwrite(ctx, c, o); err != nil {
				t.Errorf("restore the setup: %v", err)
			}
		}
	})
}
