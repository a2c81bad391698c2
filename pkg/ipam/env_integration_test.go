package ipam_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/claims"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/testenv"
)

// The tests read controller-runtime's logs nowhere; say so once, instead of
// its warning that no logger was set.
func init() { ctrllog.SetLogger(logr.Discard()) }

// sharedEnv is the test binary's one API server (testenv.Shared, whose
// cleanup deletes every claim a test made), returned once its watch cache
// shows no claim of an earlier test either: the allocator's lists of a
// crowded pool and of quota slots, LookForLegacyClaims and the informers'
// first lists read that cache (resourceVersion "0"), which may show a
// claim a moment after it is gone. From then on a test sees only its own
// claims. The tests that share the server create their namespaces apart
// (createNamespace) and use pools of their own, so no two of them ever
// claim one address.
func sharedEnv(t *testing.T) *testenv.Env {
	t.Helper()
	env := testenv.Shared(t)
	c := directClient(t, env)
	var left int
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var list v1alpha1.IPClaimList
		if err := c.List(ctx, &list, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
			return false, err
		}
		left = len(list.Items)
		return left == 0, nil
	})
	if err != nil {
		t.Fatalf("the shared API server's watch cache still shows %d claims of earlier tests: %v", left, err)
	}
	return env
}

// watchClaims calls each with every IPClaim event, in the order etcd
// committed them, until the test ends, and fails the test if the watch
// ends before: a watcher that missed events would report too low a peak.
//
// The watch starts from the state of the API server's watch cache
// (resourceVersion "0"): the claims it holds come first as Added, then
// every change after them. Not from the most recent state (no
// resourceVersion): the server then waits up to 3 s for its IPClaim watch
// cache to reach etcd's current revision, which writes of other kinds (a
// namespace, pods) moved past the cache's last IPClaim event; nothing
// brings the cache on here (etcd 3.4), and after the 3 s the watch ends
// with a Timeout error ("Too large resource version"). Only a watch that
// is the server's first IPClaim request, and so makes the cache, escapes
// that, as on a server of the test's own.
func watchClaims(t *testing.T, env *testenv.Env, each func(watch.EventType, *v1alpha1.IPClaim)) {
	t.Helper()
	wc, err := client.NewWithWatch(unthrottled(env), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.IPClaimList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})
	if err != nil {
		t.Fatalf("watch IPClaims: %v", err)
	}
	var stopping atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if c, ok := ev.Object.(*v1alpha1.IPClaim); ok {
				each(ev.Type, c)
			} else if !stopping.Load() {
				t.Errorf("watch IPClaims: %s event: %v", ev.Type, apierrors.FromObject(ev.Object))
			}
		}
		if !stopping.Load() {
			t.Errorf("watch IPClaims: ended before the test did")
		}
	}()
	t.Cleanup(func() { stopping.Store(true); w.Stop(); <-done })
}

// namespaces counts the namespaces made of each name in this test binary.
var namespaces = struct {
	sync.Mutex
	made map[string]int
}{made: map[string]int{}}

// createNamespace creates a namespace for the pods of one tenant and
// returns its name: name, or name with a number appended when an earlier
// run of the test (go test -count) made name on the shared API server,
// where it stays with its pods (no controller deletes them).
func createNamespace(t testing.TB, c client.Client, name string) string {
	t.Helper()
	namespaces.Lock()
	namespaces.made[name]++
	if n := namespaces.made[name]; n > 1 {
		name = fmt.Sprintf("%s-%d", name, n)
	}
	namespaces.Unlock()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// unthrottled is the env's config without client-side rate limiting, as an
// agent would be configured: the API server's own flow control applies.
func unthrottled(env *testenv.Env) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// directClient reads and writes through the API server, never a cache.
func directClient(t testing.TB, env *testenv.Env) client.Client {
	t.Helper()
	c, err := client.New(unthrottled(env), client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return c
}

// startCache runs an informer cache of IPClaims, indexed by pod as each
// agent has one, and stops it when the test ends.
func startCache(t testing.TB, env *testenv.Env) cache.Cache {
	t.Helper()
	ca, err := cache.New(unthrottled(env), cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("cache: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	if err := claims.IndexByPod(ctx, ca, &v1alpha1.IPClaim{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.GetInformer(ctx, &v1alpha1.IPClaim{}); err != nil {
		t.Fatalf("informer: %v", err)
	}
	go func() { defer close(done); _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	return ca
}

// newAllocator is one agent's allocator: its own client and its own cache.
func newAllocator(t testing.TB, env *testenv.Env) *ipam.Allocator {
	return ipam.New(directClient(t, env), startCache(t, env)).WithPodIndex()
}

var podSeq atomic.Int64

// testNode is the node the tests' pods are said to run on.
const testNode = "node-a"

// testSpace is the address space of the tests' approvals (a bridge's).
const testSpace = "pnbr-test.bridge"

// ensureRetrying calls Ensure again, as the agent does after its backoff,
// while the pool is only nearly exhausted (the addresses one attempt tried
// were all held), up to 100 times.
func ensureRetrying(ctx context.Context, a *ipam.Allocator, o ipam.Owner, network, iface string, ipamSpec v1alpha1.ApprovedIPAM) ([]net.IPNet, error) {
	for range 99 {
		got, err := a.Ensure(ctx, o, network, iface, ipamSpec)
		var full *ipam.ExhaustedError
		if !errors.As(err, &full) || full.Whole {
			return got, err
		}
	}
	return a.Ensure(ctx, o, network, iface, ipamSpec)
}

// createPod creates a real (unscheduled) pod and returns it as an Owner.
func createPod(t testing.TB, c client.Client, namespace string) ipam.Owner {
	t.Helper()
	return createPodNamed(t, c, namespace, fmt.Sprintf("p%d", podSeq.Add(1)))
}

// createPodNamed creates a real (unscheduled) pod of a given name.
func createPodNamed(t testing.TB, c client.Client, namespace, name string) ipam.Owner {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	return ipam.Owner{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID), Node: testNode}
}

// deletePod deletes a pod; an unscheduled pod goes at once, as a pod does
// once its kubelet confirmed it stopped.
func deletePod(t testing.TB, c client.Client, o ipam.Owner) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
	if err := c.Delete(context.Background(), pod); err != nil {
		t.Fatalf("delete pod %s: %v", o, err)
	}
}

// claimsOf lists a pod's claims straight from the API server.
func claimsOf(t testing.TB, c client.Client, uid string) []v1alpha1.IPClaim {
	t.Helper()
	var list v1alpha1.IPClaimList
	if err := c.List(context.Background(), &list, client.MatchingLabels{v1alpha1.PodUIDLabel: uid}); err != nil {
		t.Fatalf("list claims: %v", err)
	}
	return list.Items
}

// allClaims lists every claim of one network straight from the API server.
func allClaims(t testing.TB, c client.Client, network string) []v1alpha1.IPClaim {
	t.Helper()
	var list v1alpha1.IPClaimList
	if err := c.List(context.Background(), &list, client.MatchingLabels{v1alpha1.NetworkLabel: network}); err != nil {
		t.Fatalf("list claims: %v", err)
	}
	return list.Items
}

// addrs renders addresses for comparisons and messages.
func addrs(nets []net.IPNet) string {
	s := ""
	for i, n := range nets {
		if i > 0 {
			s += ","
		}
		s += n.String()
	}
	return s
}

// toUID converts an Owner's UID for an ownerReference.
func toUID(uid string) types.UID { return types.UID(uid) }
