package testenv

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	mnpv1beta1 "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// shared is the one API server of a test binary whose tests share it.
var shared struct {
	sync.Mutex
	env  *Env
	stop func() error
	opts Options
}

// Shared returns the test binary's one API server with podnet's CRDs,
// started by the first test that asks for it and stopped by RunShared
// (the package's TestMain) when the tests end: starting one costs about
// 6 s, most of a CRD test's time. Every test starts on a server without
// podnet objects: those it made (profiles, IP and MAC claims,
// NodePolicies, MultiNetworkPolicies) are deleted when it ends. Other objects stay, so tests that share the server name
// their namespaces and objects apart.
func Shared(t testing.TB) *Env {
	t.Helper()
	return SharedWith(t, Options{})
}

// SharedWith is Shared for a test binary whose shared server starts with
// opts, such as the webhook configurations envtest installs pointing at
// one serving address for all its tests (the tests that serve them take
// turns). Every call of a test binary passes the same opts.
func SharedWith(t testing.TB, opts Options) *Env {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.env == nil {
		e, stop, err := start(RepoRoot(t), opts)
		if err != nil {
			t.Fatal(err)
		}
		shared.env, shared.stop, shared.opts = e, stop, opts
	} else if !reflect.DeepEqual(opts, shared.opts) {
		t.Fatalf("shared API server: started with options %+v, asked for %+v", shared.opts, opts)
	}
	e := shared.env
	t.Cleanup(func() {
		if err := deletePodnetObjects(e.Client); err != nil {
			t.Errorf("shared API server: %v", err)
		}
	})
	return e
}

// RunShared runs the tests and then stops the shared API server, if one
// was started: a package whose tests call Shared has
// func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }.
func RunShared(m *testing.M) int {
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.stop != nil {
		if err := shared.stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the shared envtest: %v\n", err)
			code = 1
		}
		shared.env, shared.stop, shared.opts = nil, nil, Options{}
	}
	return code
}

// deletePodnetObjects deletes every object of podnet's kinds and every
// MultiNetworkPolicy, their finalizers removed first (no controller runs
// to honour them), on one DeleteAllOf request per kind (per namespace of
// its objects for a namespaced kind), and waits until they are gone.
// Deleting one object a request took seconds after a test that made
// hundreds of claims.
func deletePodnetObjects(c client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kinds := []struct {
		obj  client.Object
		list client.ObjectList
	}{
		{&podnetv1.NetworkProfile{}, &podnetv1.NetworkProfileList{}},
		{&podnetv1.IPClaim{}, &podnetv1.IPClaimList{}},
		{&podnetv1.MACClaim{}, &podnetv1.MACClaimList{}},
		{&podnetv1.NodePolicy{}, &podnetv1.NodePolicyList{}},
		{&mnpv1beta1.MultiNetworkPolicy{}, &mnpv1beta1.MultiNetworkPolicyList{}},
	}
	for _, k := range kinds {
		objs, err := listStripped(ctx, c, k.list)
		if err != nil {
			return err
		}
		if len(objs) == 0 {
			continue
		}
		namespaced, err := c.IsObjectNamespaced(k.obj)
		if err != nil {
			return fmt.Errorf("scope of %T: %w", k.obj, err)
		}
		if !namespaced {
			if err := c.DeleteAllOf(ctx, k.obj); err != nil {
				return fmt.Errorf("delete every %T: %w", k.obj, err)
			}
			continue
		}
		done := map[string]bool{}
		for _, o := range objs {
			ns := o.GetNamespace()
			if done[ns] {
				continue
			}
			done[ns] = true
			if err := c.DeleteAllOf(ctx, k.obj, client.InNamespace(ns)); err != nil {
				return fmt.Errorf("delete every %T in namespace %s: %w", k.obj, ns, err)
			}
		}
	}
	for _, k := range kinds {
		for {
			// A finalizer set after the first pass would hold its object
			// for good: remove it too.
			objs, err := listStripped(ctx, c, k.list)
			if err != nil {
				return err
			}
			if len(objs) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%T: %d objects left after a minute", k.list, len(objs))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// listStripped lists the objects of l's kind and removes the finalizers of
// those that have any.
func listStripped(ctx context.Context, c client.Client, l client.ObjectList) ([]client.Object, error) {
	if err := c.List(ctx, l); err != nil {
		return nil, fmt.Errorf("list %T: %w", l, err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		return nil, err
	}
	objs := make([]client.Object, 0, len(items))
	for _, o := range items {
		obj := o.(client.Object)
		if len(obj.GetFinalizers()) > 0 {
			obj.SetFinalizers(nil)
			if err := c.Update(ctx, obj); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("remove the finalizers of %T %s: %w", obj, obj.GetName(), err)
			}
		}
		objs = append(objs, obj)
	}
	return objs, nil
}
