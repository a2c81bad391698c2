package ipam

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/claims"
)

// maxProbes bounds how many addresses one allocation tries to create a
// claim on before it gives up for this attempt. The create is the
// reservation and nothing is asked of a cache, so each probe is one write
// (plus one read when the name is taken, to see whose it is); bounding them
// bounds what a crowded pool costs the API server per attempt. A pool of at
// most maxProbes usable addresses is walked whole. When all are held the
// attempt lists the pool's claims and tries at most maxProbes free ones
// (claimFromPool). The next attempt of the same interface carries on
// where this one stopped.
const maxProbes = 32

// Allocator hands out addresses by creating IPClaims. Everything that
// matters is in the API server, so any number of allocators (one per node)
// work side by side, and a restarted one carries on where it stopped. Its
// memory is small and only ever saves requests: the claims it created and
// has not released yet (so Release finds them before the cache does), the
// claims it deleted (so a lagging cache never hands one back), where each
// interface's last walk stopped, and, when set, a per-pool backoff.
type Allocator struct {
	// c creates and deletes claims and does the few reads that must be
	// fresh (whose claim a taken name is, whether a holder pod lives).
	c client.Client
	// r lists a pod's own claims by label. An informer cache that holds
	// only this node's claims is right here: nothing else is read from it.
	r client.Reader
	// backoff, when set, keeps a pool that had no free address from being
	// walked again until its delay has passed.
	backoff *PoolBackoff
	// noLegacy is set once LookForLegacyClaims found no claim of the
	// former name schemes in the cluster: a new claim then needs no read
	// of its address's former names.
	noLegacy atomic.Bool
	// lists lets attempts that list the claims of one crowded pool at the
	// same time share one list (claimedIn).
	lists singleflight.Group
	// ledger is what this allocator created, deleted and walked
	// (claims.Ledger): its resume keys are an interface and a pool.
	ledger *claims.Ledger[*v1alpha1.IPClaim]
	// podIndex: r indexes claims by claims.PodIndex.
	podIndex bool
}

// ipClaims is the IPClaim kind to the claim engine.
var ipClaims = claims.Kind[*v1alpha1.IPClaim]{
	Name: "IPClaim",
	New:  func() *v1alpha1.IPClaim { return &v1alpha1.IPClaim{} },
	Holder: func(c *v1alpha1.IPClaim) claims.Holder {
		return claims.Holder{UID: c.Spec.Pod.UID, Network: c.Spec.Network, Interface: c.Spec.Interface}
	},
	// Addresses go before quota slots: a slot freed while its address is
	// still held would let the namespace hold one address over its cap.
	Slot: func(c *v1alpha1.IPClaim) bool { return c.Spec.Slot != nil },
}

// New returns an Allocator. c must talk to the API server directly (not
// through an informer cache: a controller-runtime manager's GetClient reads
// from its cache, client.New does not), because deciding that a holder is
// gone must never rest on a stale read. r may be an informer cache (a
// manager's GetCache or GetClient) holding at least the claims of the pods
// this allocator serves; nil means c. Both need podnet's types and core/v1
// in their scheme.
func New(c client.Client, r client.Reader) *Allocator {
	if r == nil {
		r = c
	}
	return &Allocator{c: c, r: r, ledger: claims.NewLedger(ipClaims, nil)}
}

// WithPodIndex says that r, a cache, indexes IPClaims by claims.PodIndex
// (claims.IndexByPod): a pod's claims are then listed through it. It
// returns a.
func (a *Allocator) WithPodIndex() *Allocator {
	a.podIndex = true
	return a
}

// WithClock makes the allocator's memory of its deletes age by c (the
// real clock by default). It returns a.
func (a *Allocator) WithClock(c clock.PassiveClock) *Allocator {
	a.ledger = claims.NewLedger(ipClaims, c)
	return a
}

// WithPoolBackoff makes a pool that had no free address fail fast, with no
// request, until b's delay for it has passed; a release by this allocator
// in that pool ends the wait. It returns a.
func (a *Allocator) WithPoolBackoff(b *PoolBackoff) *Allocator {
	a.backoff = b
	return a
}

// LookForLegacyClaims lists, once, the claims of the former name schemes
// ("<address>" and "<network>.<address>", and slots of a pool, recognised
// by their lack of v1alpha1.AddressSpaceLabel) and returns how many are
// left. When none is, the allocator stops reading the former names of
// each address it claims:
// allocators no longer make such claims, so none can come back (agents of
// the former version must not run side by side with this one). Until it
// has been called, and whenever it fails, every new claim is checked. The
// list is served from the API server's watch cache (resourceVersion 0)
// and holds only legacy claims. Call it before the allocator serves pods.
func (a *Allocator) LookForLegacyClaims(ctx context.Context) (int, error) {
	req, err := labels.NewRequirement(v1alpha1.AddressSpaceLabel, selection.DoesNotExist, nil)
	if err != nil {
		return 0, fmt.Errorf("select IPClaims without label %s: %w", v1alpha1.AddressSpaceLabel, err)
	}
	var list v1alpha1.IPClaimList
	opts := &client.ListOptions{LabelSelector: labels.NewSelector().Add(*req), Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	if err := a.c.List(ctx, &list, opts); err != nil {
		return 0, fmt.Errorf("list IPClaims of the former name scheme: %w", err)
	}
	a.noLegacy.Store(len(list.Items) == 0)
	return len(list.Items), nil
}

// Owner is the pod an address is allocated to.
type Owner struct {
	Namespace, Name, UID string
	// Node is the node the pod runs on; its claims carry it as
	// v1alpha1.NodeLabel so that only that node's agent caches them.
	Node string
	// Reservation, when set (ReservationOf), makes the pod's new claims
	// outlive it for the next pod of its name: see Adopt and
	// StatefulSetKeeps.
	Reservation *v1alpha1.StatefulSetReservation
}

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// Ensure returns the addresses of one pod interface: every static address of
// ipam, then one address from each pool whose family has no static address,
// each with its prefix length, all claimed in ipam.AddressSpace (required:
// see SpaceOf). It creates the IPClaims it needs, reuses the
// ones this (pod UID, network, interface) already holds, and releases the
// interface's claims that ipam no longer asks for, so calling it again (after
// a crash, or on every reconcile) changes nothing and returns the same
// addresses. On error, claims created by this call are released again.
//
// An interface whose approval has no IPAM section holds no address: call
// Release for it instead.
func (a *Allocator) Ensure(ctx context.Context, owner Owner, network, iface string, ipam v1alpha1.ApprovedIPAM) ([]net.IPNet, error) {
	where := fmt.Sprintf("network %q interface %q of pod %s", network, iface, owner)
	if err := ValidateHolder(owner, network, iface); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if err := validateSpace(ipam.AddressSpace); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	wants, err := planAddresses(ipam)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	mine, err := a.claimsOf(ctx, owner.UID, network, iface)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	mine, slots := splitSlots(mine)
	held := make([]netip.Addr, len(mine))
	for i := range mine {
		// An unparsable address (a hand-made claim) or one of another
		// address space matches no want and is released below. A claim of
		// a former scheme (no space) holds its address in every space.
		if sp := mine[i].Spec.AddressSpace; sp == "" || sp == ipam.AddressSpace {
			held[i], _ = netip.ParseAddr(mine[i].Spec.Address)
		}
	}
	match, extra := matchHeld(wants, held)
	q := &quota{max: ipam.MaxPerNamespace, held: slots, used: make([]bool, len(slots))}

	out := make([]net.IPNet, 0, len(wants))
	var made []*v1alpha1.IPClaim
	for i, w := range wants {
		var prior *v1alpha1.IPClaim
		if match[i] >= 0 {
			prior = &mine[match[i]]
		}
		addr, fresh, err := a.ensureOne(ctx, owner, network, iface, w, prior, q)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", where, err), a.deleteClaims(ctx, made))
		}
		for _, f := range fresh {
			made = append(made, f)
			a.ledger.Remember(owner.UID, f)
		}
		out = append(out, toIPNet(addr, w.prefixLen()))
	}
	stale := q.unused()
	for _, j := range extra {
		stale = append(stale, &mine[j])
	}
	if err := a.deleteClaims(ctx, stale); err != nil {
		return nil, fmt.Errorf("%s: release addresses no longer approved: %w", where, err)
	}
	return out, nil
}

// Release deletes the claims of one pod: those of one interface of one
// network, of every interface of one network (iface ""), or all of them
// (network and iface "") but those reserved for its StatefulSet
// (v1alpha1.StatefulSetReservation), which outlive the pod. Claims already gone are not an error.
//
// It takes the pod's claims from the cache plus the claims this allocator
// created itself: a cache lagging behind a claim created a moment ago would
// otherwise make Release miss it and leak the address (the concurrency test
// saw exactly that under load). Listing from the API server instead would
// be exact too, but costs a scan of every claim per call where etcd cannot
// serve consistent lists from the watch cache. After a restart, call it
// only once the cache has synced.
func (a *Allocator) Release(ctx context.Context, ownerUID, network, iface string) error {
	var list v1alpha1.IPClaimList
	if err := a.r.List(ctx, &list, claims.OfPod(ownerUID, a.podIndex, nil)...); err != nil {
		return fmt.Errorf("list IPClaims of pod UID %s: %w", ownerUID, err)
	}
	ofPod := func(s v1alpha1.IPClaimSpec) bool {
		return s.Pod.UID == ownerUID && (network == "" || s.Network == network) && (iface == "" || s.Interface == iface)
	}
	// The whole pod goes: what it holds for its StatefulSet stays.
	kept := func(s v1alpha1.IPClaimSpec) bool { return network == "" && iface == "" && s.StatefulSet != nil }
	match := func(s v1alpha1.IPClaimSpec) bool { return ofPod(s) && !kept(s) }
	doomed := slices.DeleteFunc(a.ledger.Forget(ownerUID, func(c *v1alpha1.IPClaim) bool { return ofPod(c.Spec) }), func(c *v1alpha1.IPClaim) bool { return kept(c.Spec) })
	for i := range list.Items {
		if match(list.Items[i].Spec) && !containsClaim(doomed, &list.Items[i]) && !a.ledger.Released(list.Items[i].UID) {
			doomed = append(doomed, &list.Items[i])
		}
	}
	if err := a.deleteClaims(ctx, doomed); err != nil {
		return fmt.Errorf("release network %q interface %q of pod UID %s: %w", network, iface, ownerUID, err)
	}
	return nil
}

// PodAlive reports whether the pod with this namespace, name and UID exists
// and can still run. A pod that is gone, replaced by a new pod of the same
// name, or in a terminal phase (Succeeded, Failed) can never be alive
// again, so its claims are dead for good: this is what makes reclaiming them
// safe. It reads from the API server, never from a cache.
func (a *Allocator) PodAlive(ctx context.Context, namespace, name, uid string) (bool, error) {
	var pod corev1.Pod
	err := a.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	if string(pod.UID) != uid {
		return false, nil
	}
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed, nil
}

// ensureOne makes sure the interface holds one address for w. prior is the
// claim the cache (or this allocator's own note) says it already holds for
// w, if any: it is used as it is, with no read, since only a dead pod's
// claims are ever deleted by anyone else and this allocator's own deletes
// are filtered out (see claimsOf). Under a quota, a new address is taken
// only once the interface holds a quota slot of w's pool, and the slot is
// given back when no address could be taken. fresh are the claims created
// by this call (for rollback).
func (a *Allocator) ensureOne(ctx context.Context, owner Owner, network, iface string, w want, prior *v1alpha1.IPClaim, q *quota) (addr netip.Addr, fresh []*v1alpha1.IPClaim, err error) {
	if prior != nil {
		addr, _ := netip.ParseAddr(prior.Spec.Address)
		slot, err := a.adoptSlot(ctx, owner, network, iface, w, q)
		if slot != nil {
			fresh = append(fresh, slot)
		}
		return addr, fresh, err
	}
	if q.max > 0 {
		slot, err := a.ensureSlot(ctx, owner, network, iface, w, q)
		if err != nil {
			return netip.Addr{}, nil, err
		}
		if slot != nil {
			fresh = append(fresh, slot)
		}
	}
	addr, claim, err := a.ensureAddress(ctx, owner, network, iface, w)
	if err != nil {
		return netip.Addr{}, nil, errors.Join(err, a.deleteClaims(ctx, fresh))
	}
	if claim != nil {
		fresh = append(fresh, claim)
	}
	return addr, fresh, nil
}

// ensureAddress claims a new address for w: the static one, or one of the
// pool (unless the pool is in backoff).
func (a *Allocator) ensureAddress(ctx context.Context, owner Owner, network, iface string, w want) (addr netip.Addr, fresh *v1alpha1.IPClaim, err error) {
	if w.static.IsValid() {
		return a.claimStatic(ctx, owner, network, iface, w)
	}
	if wait := a.backoff.wait(network, w.pool); wait > 0 {
		// Only a pool found full waits, and this allocator has not
		// freed an address of it since.
		return netip.Addr{}, nil, &ExhaustedError{Network: network, Pool: w.poolText, Whole: true, RetryAfter: wait}
	}
	addr, fresh, err = a.claimFromPool(ctx, owner, network, iface, w)
	// Only a pool found full waits: an attempt whose candidates were all
	// taken a moment before by other allocators is tried again at once.
	var full *ExhaustedError
	switch {
	case errors.As(err, &full) && full.Whole:
		full.RetryAfter = a.backoff.failed(network, w.pool)
	case err == nil:
		a.backoff.succeeded(network, w.pool)
	}
	return addr, fresh, err
}

// claimStatic claims one given address, reclaiming it from a dead holder.
func (a *Allocator) claimStatic(ctx context.Context, owner Owner, network, iface string, w want) (netip.Addr, *v1alpha1.IPClaim, error) {
	addr := w.static.Addr()
	claim := newClaim(owner, network, iface, w, addr)
	holder := claim.Name
	for range 2 {
		ok, fresh, cur, err := a.claimAddress(ctx, claim.DeepCopy())
		if err != nil || ok {
			return addr, fresh, err
		}
		if cur != nil {
			holder = cur.Name // a legacy claim, or the address claim itself
		}
		freed, err := a.reclaimIfDead(ctx, cur, map[string]bool{})
		if err != nil {
			return netip.Addr{}, nil, err
		}
		if !freed {
			break
		}
	}
	return netip.Addr{}, nil, &ConflictError{Network: network, Address: addr.String(), Claim: holder}
}

// taken is a name found held during a walk: the claim tried on it and the
// claim that holds it.
type taken struct {
	tried, cur *v1alpha1.IPClaim
}

// claimFunc creates a claim: ok reports whether it is the interface's now,
// fresh is the claim when this call created it, cur the holder when the
// name is somebody else's.
type claimFunc func(ctx context.Context, claim *v1alpha1.IPClaim) (ok bool, fresh, cur *v1alpha1.IPClaim, err error)

// claimFromPool walks the pool from the interface's hashed offset (or from
// where its last fruitless attempt stopped) and tries to create a claim on
// each address, at most maxProbes of them: the first create that succeeds
// is the reservation. When all of them are held and the walk did not cover
// the pool, it lists which addresses of the pool are claimed (claimedIn)
// and tries the first free ones along the same walk (freeInPool): the pool
// is reported full (ExhaustedError.Whole, which puts it in backoff) only
// when the walk or the list covered all of it and found nothing free. When
// nothing could be claimed it looks for holders that are dead among those
// it met and takes over one's address.
func (a *Allocator) claimFromPool(ctx context.Context, owner Owner, network, iface string, w want) (netip.Addr, *v1alpha1.IPClaim, error) {
	hosts := usableHosts(w.pool)
	key := owner.UID + "/" + network + "/" + iface + "/" + w.pool.String()
	start := a.ledger.ResumeAt(key) % hosts.count
	wk := walkFrom(hosts, key, start)
	tries := freeInPool(w, wk, nil, maxProbes)
	whole := wk.visited == hosts.count
	addr, fresh, held, err := a.claimFirst(ctx, owner, network, iface, w, tries)
	if err == nil && !addr.IsValid() && !whole {
		var claimed map[netip.Addr]bool
		if claimed, err = a.claimedIn(ctx, w); err == nil {
			tries = freeInPool(w, walkFrom(hosts, key, start), claimed, maxProbes)
			whole = len(tries) == 0
			var more []taken
			addr, fresh, more, err = a.claimFirst(ctx, owner, network, iface, w, tries)
			held = append(held, more...)
		}
	}
	if err != nil {
		return netip.Addr{}, nil, err
	}
	if addr.IsValid() {
		a.ledger.SetResume(key, 0)
		return addr, fresh, nil
	}
	a.ledger.SetResume(key, (start+wk.visited)%hosts.count)
	won, fresh, err := a.reclaimFromDead(ctx, owner, held, a.claimAddress)
	if err != nil {
		return netip.Addr{}, nil, err
	}
	if won != nil {
		addr, _ := netip.ParseAddr(won.Spec.Address)
		return addr, fresh, nil
	}
	return netip.Addr{}, nil, &ExhaustedError{Network: network, Pool: w.poolText, Tried: len(held), Whole: whole}
}

// claimFirst tries to create a claim on each address of tries in turn and
// returns the first it got (invalid when none), the claim it created, and
// the names it found held.
func (a *Allocator) claimFirst(ctx context.Context, owner Owner, network, iface string, w want, tries []netip.Addr) (netip.Addr, *v1alpha1.IPClaim, []taken, error) {
	var held []taken
	for _, addr := range tries {
		if err := ctx.Err(); err != nil {
			return netip.Addr{}, nil, nil, err
		}
		claim := newClaim(owner, network, iface, w, addr)
		ok, fresh, cur, err := a.claimAddress(ctx, claim.DeepCopy())
		if err != nil {
			return netip.Addr{}, nil, nil, err
		}
		if ok {
			return addr, fresh, nil, nil
		}
		held = append(held, taken{tried: claim, cur: cur})
	}
	return netip.Addr{}, nil, held, nil
}

// claimAddress creates an address claim, and then makes sure that no
// claim of a former name of the address ("<address>", "<network>.<address>":
// claims made before claims were keyed by address space) holds the
// address for another pod interface: such claims keep their addresses, in
// every space, until released. When one does, the new claim is deleted
// again and the former claim is returned as the holder.
func (a *Allocator) claimAddress(ctx context.Context, claim *v1alpha1.IPClaim) (ok bool, fresh, cur *v1alpha1.IPClaim, err error) {
	ok, fresh, cur, err = a.ledger.Create(ctx, a.c, claim)
	if err != nil || !ok || fresh == nil || a.noLegacy.Load() {
		return ok, fresh, cur, err
	}
	s := claim.Spec
	addr, _ := netip.ParseAddr(s.Address)
	for _, name := range []string{FormerClaimName(addr), LegacyClaimName(s.Network, addr)} {
		var former v1alpha1.IPClaim
		err = a.c.Get(ctx, client.ObjectKey{Name: name}, &former)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && holds(&former, s.Pod.UID, s.Network, s.Interface)):
			continue
		case err != nil:
			return false, nil, nil, errors.Join(fmt.Errorf("get IPClaim %q: %w", name, err), a.deleteClaims(ctx, []*v1alpha1.IPClaim{fresh}))
		}
		return false, nil, &former, a.deleteClaims(ctx, []*v1alpha1.IPClaim{fresh})
	}
	return true, fresh, nil, nil
}

// reclaimFromDead takes over a name of held whose holder is dead, with
// try. It returns the claim it tried and won (nil when every holder lives)
// and the one it created. Only claims of the allocating pod's own node are
// taken over: an agent may change only its node's claims
// (deploy/policies/agent-node.yaml), and podnet-controller frees the rest.
func (a *Allocator) reclaimFromDead(ctx context.Context, owner Owner, held []taken, try claimFunc) (won, fresh *v1alpha1.IPClaim, err error) {
	alive := map[string]bool{}
	for _, t := range held {
		if t.cur == nil || t.cur.Labels[v1alpha1.NodeLabel] != owner.Node {
			continue
		}
		freed, err := a.reclaimIfDead(ctx, t.cur, alive)
		if err != nil {
			return nil, nil, err
		}
		if !freed {
			continue
		}
		ok, fresh, _, err := try(ctx, t.tried.DeepCopy())
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return t.tried, fresh, nil
		}
	}
	return nil, nil, nil
}

// reclaimIfDead deletes claim when its holder pod is dead, and reports
// whether the address is free now. alive memoizes holders already checked.
// The delete carries the claim's UID as a precondition, so a claim that
// somebody re-created on the same name in the meantime is never touched.
func (a *Allocator) reclaimIfDead(ctx context.Context, claim *v1alpha1.IPClaim, alive map[string]bool) (bool, error) {
	if claim.Spec.StatefulSet != nil {
		// Held for a StatefulSet beyond its pod: only the next pod of
		// its name takes it over, and podnet-controller alone releases it.
		return false, nil
	}
	p := claim.Spec.Pod
	live, known := alive[p.UID]
	if !known {
		var err error
		if live, err = a.PodAlive(ctx, p.Namespace, p.Name, p.UID); err != nil {
			return false, fmt.Errorf("check holder of IPClaim %q: %w", claim.Name, err)
		}
		alive[p.UID] = live
	}
	if live {
		return false, nil
	}
	return true, a.deleteClaims(ctx, []*v1alpha1.IPClaim{claim})
}

// holds reports whether claim belongs to this pod interface.
func holds(claim *v1alpha1.IPClaim, uid, network, iface string) bool {
	s := claim.Spec
	return s.Pod.UID == uid && s.Network == network && s.Interface == iface
}

// newClaim is the claim that reserves addr of w's pool, in w's address
// space, for one pod interface.
func newClaim(owner Owner, network, iface string, w want, addr netip.Addr) *v1alpha1.IPClaim {
	c := claimFor(owner, network, iface, w)
	c.Name = ClaimName(w.space, addr)
	c.Spec.Address = addr.String()
	return c
}

// claimFor is a claim of one pod interface on w's pool and address space,
// not yet naming what it holds.
func claimFor(owner Owner, network, iface string, w want) *v1alpha1.IPClaim {
	c := &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Labels: map[string]string{
				v1alpha1.PodUIDLabel:       owner.UID,
				v1alpha1.NetworkLabel:      network,
				v1alpha1.NodeLabel:         owner.Node,
				v1alpha1.NamespaceLabel:    owner.Namespace,
				v1alpha1.AddressSpaceLabel: w.space,
			},
		},
		Spec: v1alpha1.IPClaimSpec{
			Network:      network,
			AddressSpace: w.space,
			Pool:         w.pool.String(),
			Pod:          v1alpha1.PodReference{Namespace: owner.Namespace, Name: owner.Name, UID: owner.UID},
			Interface:    iface,
			StatefulSet:  owner.Reservation.DeepCopy(),
		},
	}
	reservationLabels(c.Labels, owner)
	return c
}

// ValidateHolder checks what names a claim: a DNS-label network (it is part
// of the claim name and a label value), an interface name the kernel
// accepts, and a pod UID usable as a label value.
func ValidateHolder(owner Owner, network, iface string) error {
	if owner.Namespace == "" || owner.Name == "" {
		return fmt.Errorf("pod namespace and name are required")
	}
	if errs := validation.IsValidLabelValue(owner.Node); owner.Node == "" || len(errs) > 0 {
		return fmt.Errorf("node %q: must be a non-empty label value (the pod must be scheduled): %v", owner.Node, errs)
	}
	if errs := validation.IsValidLabelValue(owner.UID); owner.UID == "" || len(errs) > 0 {
		return fmt.Errorf("pod UID %q: must be a non-empty label value: %v", owner.UID, errs)
	}
	if errs := validation.IsDNS1123Label(network); len(errs) > 0 || len(network) > 32 {
		return fmt.Errorf("network %q: must be a DNS label of at most 32 characters: %v", network, errs)
	}
	if iface == "" || len(iface) > 15 {
		return fmt.Errorf("interface %q: must be 1 to 15 characters", iface)
	}
	return nil
}

// validateSpace checks the address space a claim is keyed by: a label
// value, never empty (an approval without one gets it from SpaceOf).
func validateSpace(space string) error {
	if errs := validation.IsValidLabelValue(space); space == "" || len(errs) > 0 {
		return fmt.Errorf("ipam.addressSpace %q: must be a non-empty label value: %v", space, errs)
	}
	return nil
}

// containsClaim reports whether claims holds the same object as c.
func containsClaim(claims []*v1alpha1.IPClaim, c *v1alpha1.IPClaim) bool {
	for _, x := range claims {
		if x.Name == c.Name && x.UID == c.UID {
			return true
		}
	}
	return false
}

// claimsOf lists the claims one pod interface holds: those the cache has,
// less those this allocator deleted, plus those it created that the cache
// may not have seen yet (claims.Ledger.Mine).
func (a *Allocator) claimsOf(ctx context.Context, uid, network, iface string) ([]v1alpha1.IPClaim, error) {
	var list v1alpha1.IPClaimList
	if err := a.r.List(ctx, &list, claims.OfPod(uid, a.podIndex, client.MatchingLabels{v1alpha1.NetworkLabel: network})...); err != nil {
		return nil, fmt.Errorf("list IPClaims of pod UID %s: %w", uid, err)
	}
	var mine []v1alpha1.IPClaim
	for _, c := range a.ledger.Mine(uid, claims.Pointers(list.Items), func(c *v1alpha1.IPClaim) bool { return holds(c, uid, network, iface) }) {
		mine = append(mine, *c)
	}
	return mine, nil
}

// deleteClaims deletes each claim if it is still the same object, quota
// slots last (claims.Ledger.Delete); each deleted one frees its pool from
// backoff.
func (a *Allocator) deleteClaims(ctx context.Context, cs []*v1alpha1.IPClaim) error {
	return a.ledger.Delete(ctx, a.c, cs, func(claim *v1alpha1.IPClaim) {
		if addr, perr := netip.ParseAddr(claim.Spec.Address); perr == nil {
			a.backoff.freed(claim.Spec.Network, addr)
		}
		if pool, perr := netip.ParsePrefix(claim.Spec.Pool); perr == nil && claim.Spec.Slot != nil {
			a.backoff.succeeded(quotaKey(claim.Spec.Pod.Namespace, claim.Spec.AddressSpace), pool)
		}
	})
}

// tryClaim creates claim (claims.Ledger.Create).
func (a *Allocator) tryClaim(ctx context.Context, claim *v1alpha1.IPClaim) (ok bool, fresh, cur *v1alpha1.IPClaim, err error) {
	return a.ledger.Create(ctx, a.c, claim)
}
