package controller_test

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller"
	"podnet.io/podnet/controller/profilestatus"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/test/testenv"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// startController runs the controller against env until the test ends.
func startController(t *testing.T, env *testenv.Env, grace time.Duration) {
	t.Helper()
	startControllerWith(t, env, controller.Options{Grace: grace, Period: time.Minute})
}

// startControllerWith runs the controller with o against env until the
// test ends.
func startControllerWith(t *testing.T, env *testenv.Env, o controller.Options) {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.UserAgent = controller.Name
	skip := true // each test runs its own manager in one process
	mgr, err := manager.New(cfg, manager.Options{Scheme: env.Scheme, Cache: controller.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := controller.Setup(ctx, mgr, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	testenv.RunManager(t, ctx, mgr)
}

// createPod creates a pod of namespace ns on node-a, approved net1 on
// network data.
func createPod(t *testing.T, c client.Client, ns, name string) *corev1.Pod {
	t.Helper()
	return createPodOn(t, c, ns, name, "node-a")
}

func createPodOn(t *testing.T, c client.Client, ns, name, node string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations: map[string]string{v1alpha1.ApprovedAnnotation: `{"interfaces":[{"interface":"net1","network":"data"}]}`}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := c.Create(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// createClaim creates the claim an agent of node-a makes for addr.
func createClaim(t *testing.T, c client.Client, network, addr string, pod v1alpha1.PodReference) *v1alpha1.IPClaim {
	t.Helper()
	claim := claimOf(network, addr, pod, "node-a")
	if err := c.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
	return claim
}

// claimOf is the claim the agent of node makes for addr on net1.
func claimOf(network, addr string, pod v1alpha1.PodReference, node string) *v1alpha1.IPClaim {
	space := "pnbr-" + network + ".bridge" // the bridge of profile()
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ipam.ClaimName(space, netip.MustParseAddr(addr)),
			Labels: map[string]string{v1alpha1.NodeLabel: node, v1alpha1.NetworkLabel: network,
				v1alpha1.PodUIDLabel: pod.UID, v1alpha1.NamespaceLabel: pod.Namespace, v1alpha1.AddressSpaceLabel: space}},
		Spec: v1alpha1.IPClaimSpec{Network: network, AddressSpace: space, Address: addr, Interface: "net1", Pod: pod},
	}
}

// slotOf is quota slot k of pool 10.60.0.0/24 that the agent of node makes
// for pod, in namespace ns's quota.
func slotOf(ns string, k int32, pod v1alpha1.PodReference, node string) *v1alpha1.IPClaim {
	pool := netip.MustParsePrefix("10.60.0.0/24")
	const space = "pnbr-data.bridge" // the bridge of profile()
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ipam.SlotName(space, pool, ns, int(k)),
			Labels: map[string]string{v1alpha1.NodeLabel: node, v1alpha1.NetworkLabel: "data",
				v1alpha1.PodUIDLabel: pod.UID, v1alpha1.NamespaceLabel: pod.Namespace, v1alpha1.AddressSpaceLabel: space}},
		Spec: v1alpha1.IPClaimSpec{Network: "data", AddressSpace: space, Pool: pool.String(), Slot: &k, Interface: "net1", Pod: pod},
	}
}

func refOf(p *corev1.Pod) v1alpha1.PodReference {
	return v1alpha1.PodReference{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}
}

func profile(name, network, pool string) *v1alpha1.NetworkProfile {
	return &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{{
			Name: network, Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-" + network},
			IPAM: &v1alpha1.IPAM{Pools: []string{pool}, Gateways: []string{"10.60.0.1"}},
		}}},
	}
}

// TestIntegrationControllerFreesClaimsOfGonePods: the claims of a deleted
// pod (its address and its quota slot) and of a pod that never existed go; the claim of a live pod and the
// claim of a pod re-created under the same name by another UID's stay
// apart correctly.
func TestIntegrationControllerFreesClaimsOfGonePods(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := testNamespace(t, c, "gone-pods", nil)
	startController(t, env, time.Second)

	live := createPod(t, c, ns, "live")
	doomed := createPod(t, c, ns, "doomed")
	liveClaim := createClaim(t, c, "data", "10.60.0.2", refOf(live))
	doomedClaim := createClaim(t, c, "data", "10.60.0.3", refOf(doomed))
	ghost := createClaim(t, c, "data", "10.60.0.4", v1alpha1.PodReference{Namespace: ns, Name: "never", UID: "no-such-uid"})
	// Same name as the live pod, another UID: a claim of an earlier pod.
	stale := createClaim(t, c, "data", "10.60.0.5", v1alpha1.PodReference{Namespace: ns, Name: "live", UID: "earlier-uid"})
	// The doomed pod's quota slot goes with its address; so do its claims
	// named as earlier versions named them (an address claim of the
	// network and the address, a slot of the pool).
	k := int32(0)
	pool := netip.MustParsePrefix("10.60.0.0/24")
	labels := map[string]string{v1alpha1.NodeLabel: "node-a", v1alpha1.NetworkLabel: "data", v1alpha1.PodUIDLabel: string(doomed.UID)}
	doomedSlot := slotOf(ns, 0, refOf(doomed), "node-a")
	formerSlot := &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ipam.FormerSlotName(pool, ns, 0), Labels: labels},
		Spec:       v1alpha1.IPClaimSpec{Network: "data", Pool: pool.String(), Slot: &k, Interface: "net2", Pod: refOf(doomed)},
	}
	legacy := &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ipam.LegacyClaimName("data", netip.MustParseAddr("10.60.0.6")), Labels: labels},
		Spec:       v1alpha1.IPClaimSpec{Network: "data", Address: "10.60.0.6", Interface: "net2", Pod: refOf(doomed)},
	}
	for _, cl := range []*v1alpha1.IPClaim{doomedSlot, formerSlot, legacy} {
		if err := c.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, doomed, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	gone := func(claim *v1alpha1.IPClaim) error {
		err := c.Get(ctx, client.ObjectKeyFromObject(claim), &v1alpha1.IPClaim{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("claim %s still there (err=%v)", claim.Name, err)
	}
	testenv.Eventually(t, time.Minute, "claims of gone pods deleted", func(context.Context) error {
		for _, cl := range []*v1alpha1.IPClaim{doomedClaim, doomedSlot, formerSlot, legacy, ghost, stale} {
			if err := gone(cl); err != nil {
				return err
			}
		}
		return nil
	})
	if err := c.Get(ctx, client.ObjectKeyFromObject(liveClaim), &v1alpha1.IPClaim{}); err != nil {
		t.Fatalf("the live pod's claim: %v", err)
	}
}

// TestIntegrationControllerWritesProfileStatus: a profile gets Ready,
// observedGeneration and its pool usage; a second profile whose pool
// overlaps makes both Ready=False with reason Conflict; usage follows
// claims, counted per address space (a network name on the same bridge
// shows the other's claims).
func TestIntegrationControllerWritesProfileStatus(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := testNamespace(t, c, "profile-status", nil)
	startController(t, env, time.Minute)
	pod := createPod(t, c, ns, "p")
	createClaim(t, c, "data", "10.60.0.2", refOf(pod))
	demo := profile("demo", "data", "10.60.0.0/29") // 6 hosts less the gateway: 5
	if err := c.Create(ctx, demo); err != nil {
		t.Fatal(err)
	}
	status := func(name string, want func(st v1alpha1.NetworkProfileStatus, gen int64) error) {
		t.Helper()
		testenv.Eventually(t, time.Minute, "status of "+name, func(ctx context.Context) error {
			var p v1alpha1.NetworkProfile
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
				return err
			}
			return want(p.Status, p.Generation)
		})
	}
	usage := func(inUse, free int64, ready metav1.ConditionStatus, reason string) func(v1alpha1.NetworkProfileStatus, int64) error {
		return func(st v1alpha1.NetworkProfileStatus, gen int64) error {
			cond := meta.FindStatusCondition(st.Conditions, profilestatus.ConditionReady)
			switch {
			case st.ObservedGeneration != gen:
				return fmt.Errorf("observedGeneration %d, generation %d", st.ObservedGeneration, gen)
			case cond == nil || cond.Status != ready || cond.Reason != reason:
				return fmt.Errorf("Ready condition %+v, want %s %s", cond, ready, reason)
			case len(st.Networks) != 1 || len(st.Networks[0].Pools) != 1:
				return fmt.Errorf("networks %+v", st.Networks)
			}
			u := st.Networks[0].Pools[0]
			if u.InUse != inUse || u.Available != free || st.AddressesInUse != inUse || st.LeastAvailable == nil || *st.LeastAvailable != free {
				return fmt.Errorf("usage %+v (in use %d, least free %v), want %d in use and %d free", u, st.AddressesInUse, st.LeastAvailable, inUse, free)
			}
			return nil
		}
	}
	status("demo", usage(1, 4, metav1.ConditionTrue, profilestatus.ReasonValid))
	createClaim(t, c, "data", "10.60.0.3", refOf(pod))
	status("demo", usage(2, 3, metav1.ConditionTrue, profilestatus.ReasonValid))

	// Another network with the same pool on another bridge is another
	// address space: no clash. On the same bridge it clashes.
	apart := profile("apart", "apart", "10.60.0.0/24")
	if err := c.Create(ctx, apart); err != nil {
		t.Fatal(err)
	}
	status("apart", usage(0, 253, metav1.ConditionTrue, profilestatus.ReasonValid))
	clash := profile("clash", "other", "10.60.0.0/24")
	clash.Spec.Networks[0].Bridge.Name = "pnbr-data"
	if err := c.Create(ctx, clash); err != nil {
		t.Fatal(err)
	}
	status("demo", usage(2, 3, metav1.ConditionFalse, profilestatus.ReasonConflict))
	// One address space: the other network name shows demo's claims too,
	// and follows a new one.
	status("clash", usage(2, 251, metav1.ConditionFalse, profilestatus.ReasonConflict))
	createClaim(t, c, "data", "10.60.0.4", refOf(pod))
	status("clash", usage(3, 250, metav1.ConditionFalse, profilestatus.ReasonConflict))
	status("demo", usage(3, 2, metav1.ConditionFalse, profilestatus.ReasonConflict))
	if err := c.Delete(ctx, clash); err != nil {
		t.Fatal(err)
	}
	status("demo", usage(3, 2, metav1.ConditionTrue, profilestatus.ReasonValid))
}

// modifiedUntilQuiet counts the writes of profile name after resource
// version rv, until a second passes without one. A watch the API server
// ends is taken up again after the last write seen; writes that go on for
// two minutes fail the test.
func modifiedUntilQuiet(t *testing.T, env *testenv.Env, name, rv string) int {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(2 * time.Minute)
	writes := 0
	for {
		w, err := wc.Watch(ctx, &v1alpha1.NetworkProfileList{}, client.MatchingFields{"metadata.name": name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			t.Fatal(err)
		}
		quiet, ended := false, false
		for !quiet && !ended {
			select {
			case ev, ok := <-w.ResultChan():
				switch {
				case !ok:
					ended = true
				case ev.Type == watch.Error:
					t.Fatalf("watch of profile %s: %v", name, apierrors.FromObject(ev.Object))
				case ev.Type == watch.Modified:
					writes++
					rv = ev.Object.(*v1alpha1.NetworkProfile).ResourceVersion
				}
			case <-time.After(time.Second):
				quiet = true
			}
			if time.Now().After(deadline) {
				w.Stop()
				t.Fatalf("profile %s still written after 2 minutes: %d writes", name, writes)
			}
		}
		w.Stop()
		if quiet {
			return writes
		}
	}
}

// TestIntegrationProfileStatusGathersClaims: the claims of a burst of pods
// reach a profile's status in a few writes, not one each (every write is
// sent to every agent and webhook watching profiles); the status still
// ends with all of them.
func TestIntegrationProfileStatusGathersClaims(t *testing.T) {
	env := sharedEnv(t)
	c := env.Client
	ctx := context.Background()
	ns := testNamespace(t, c, "status-batch", nil)
	startControllerWith(t, env, controller.Options{Grace: time.Minute, Period: time.Minute, StatusBatch: 5 * time.Second})
	pod := createPod(t, c, ns, "p")
	if err := c.Create(ctx, profile("demo", "data", "10.60.0.0/24")); err != nil {
		t.Fatal(err)
	}
	inUse := func(want int64) {
		t.Helper()
		testenv.Eventually(t, time.Minute, "usage of demo", func(ctx context.Context) error {
			var p v1alpha1.NetworkProfile
			if err := c.Get(ctx, client.ObjectKey{Name: "demo"}, &p); err != nil {
				return err
			}
			if p.Status.AddressesInUse != want || p.Status.ObservedGeneration != p.Generation {
				return fmt.Errorf("status %+v, want %d addresses in use", p.Status, want)
			}
			return nil
		})
	}
	inUse(0)
	var before v1alpha1.NetworkProfile
	if err := c.Get(ctx, client.ObjectKey{Name: "demo"}, &before); err != nil {
		t.Fatal(err)
	}
	const claims = 20
	for i := range claims {
		createClaim(t, c, "data", fmt.Sprintf("10.60.0.%d", 10+i), refOf(pod))
	}
	inUse(claims)
	writes := modifiedUntilQuiet(t, env, "demo", before.ResourceVersion)
	// 20 creates take well under the 5 s batch here; a slow run may
	// split them over a few batches.
	if writes == 0 || writes > claims/4 {
		t.Fatalf("%d status writes for %d claims, want 1 to %d", writes, claims, claims/4)
	}
	t.Logf("%d status writes for %d claims", writes, claims)
}
