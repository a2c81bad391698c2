package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// shared is the one API server of a test binary whose tests share it.
var shared struct {
	sync.Mutex
	env  *Env
	stop func() error
}

// Shared returns the test binary's one API server with podnet's CRDs,
// started by the first test that asks for it and stopped by RunShared
// (the package's TestMain) when the tests end: starting one costs about
// 6 s, most of a CRD test's time. Every test starts on a server without
// podnet objects: those it made (profiles, IP and MAC claims) are deleted
// when it ends. Other objects stay, so tests that share the server name
// their namespaces and objects apart.
func Shared(t testing.TB) *Env {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.env == nil {
		e, stop, err := start(RepoRoot(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		shared.env, shared.stop = e, stop
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
		shared.env, shared.stop = nil, nil
	}
	return code
}

// deletePodnetObjects deletes every object of podnet's kinds (all
// cluster-scoped), their finalizers removed first (no controller runs to
// honour them), and waits until they are gone.
func deletePodnetObjects(c client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lists := []client.ObjectList{&podnetv1.NetworkProfileList{}, &podnetv1.IPClaimList{}, &podnetv1.MACClaimList{}}
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			return fmt.Errorf("list %T: %w", l, err)
		}
		objs, err := meta.ExtractList(l)
		if err != nil {
			return err
		}
		for _, o := range objs {
			obj := o.(client.Object)
			if len(obj.GetFinalizers()) > 0 {
				obj.SetFinalizers(nil)
				if err := c.Update(ctx, obj); client.IgnoreNotFound(err) != nil {
					return fmt.Errorf("remove the finalizers of %T %s: %w", obj, obj.GetName(), err)
				}
			}
			if err := c.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
			}
		}
	}
	for _, l := range lists {
		for {
			if err := c.List(ctx, l); err != nil {
				return fmt.Errorf("list %T: %w", l, err)
			}
			if meta.LenList(l) == 0 {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%T: %d objects left after a minute", l, meta.LenList(l))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}
