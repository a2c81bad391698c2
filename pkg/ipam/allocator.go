package ipam

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// maxReclaimChecks bounds how many distinct holders one exhausted
// allocation checks for liveness before giving up, so that an agent
// retrying pods on a full pool costs the API server a bounded number of
// reads per attempt. Claims of dead pods beyond it are removed by Sweep.
const maxReclaimChecks = 256

// maxCreateAttempts bounds create-get rounds on one name whose claim is
// deleted between our create and our get.
const maxCreateAttempts = 3

// Allocator hands out addresses by creating IPClaims. Everything that
// matters is in the API server, so any number of allocators (one per node)
// work side by side, and a restarted one carries on where it stopped. The
// only memory it has is a note of the claims it created, kept until they
// are released, so that Release finds them even when the cache has not
// seen them yet.
type Allocator struct {
	// c creates and deletes claims and does the few reads that must be
	// fresh (confirming a claim still exists, checking a holder pod).
	c client.Client
	// r serves the frequent reads: a pod's claims by label, and whether a
	// candidate address is taken. An informer cache is right here; a stale
	// answer costs a failed create, never a duplicate.
	r client.Reader

	mu sync.Mutex
	// created holds, per pod UID, the claims this allocator created and
	// has not released yet.
	created map[string][]*v1alpha1.IPClaim
}

// New returns an Allocator. c must talk to the API server directly (not
// through an informer cache: a controller-runtime manager's GetClient reads
// from its cache, client.New does not), because deciding that a holder is
// gone must never rest on a stale read. r may be an informer cache (a
// manager's GetCache or GetClient); nil means c. Both need podnet's types
// and core/v1 in their scheme.
func New(c client.Client, r client.Reader) *Allocator {
	if r == nil {
		r = c
	}
	return &Allocator{c: c, r: r, created: map[string][]*v1alpha1.IPClaim{}}
}

// Owner is the pod an address is allocated to.
type Owner struct {
	Namespace, Name, UID string
}

func (o Owner) String() string { return o.Namespace + "/" + o.Name }

// Ensure returns the addresses of one pod interface: every static address of
// ipam, then one address from each pool whose family has no static address,
// each with its prefix length. It creates the IPClaims it needs, reuses the
// ones this (pod UID, network, interface) already holds, and releases the
// interface's claims that ipam no longer asks for, so calling it again (after
// a crash, or on every reconcile) changes nothing and returns the same
// addresses. On error, claims created by this call are released again.
//
// An interface whose approval has no IPAM section holds no address: call
// Release for it instead.
func (a *Allocator) Ensure(ctx context.Context, owner Owner, network, iface string, ipam v1alpha1.ApprovedIPAM) ([]net.IPNet, error) {
	where := fmt.Sprintf("network %q interface %q of pod %s", network, iface, owner)
	if err := validateHolder(owner, network, iface); err != nil {
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
	held := make([]netip.Addr, len(mine))
	for i := range mine {
		// An unparsable address (a hand-made claim) matches no want and is
		// released below.
		held[i], _ = netip.ParseAddr(mine[i].Spec.Address)
	}
	match, extra := matchHeld(wants, held)

	out := make([]net.IPNet, 0, len(wants))
	var made []*v1alpha1.IPClaim
	for i, w := range wants {
		var prior *v1alpha1.IPClaim
		if match[i] >= 0 {
			prior = &mine[match[i]]
		}
		addr, fresh, err := a.ensureOne(ctx, owner, network, iface, w, prior)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("%s: %w", where, err), a.deleteClaims(ctx, made))
		}
		if fresh != nil {
			made = append(made, fresh)
			a.remember(owner.UID, fresh)
		}
		out = append(out, toIPNet(addr, w.prefixLen()))
	}
	stale := make([]*v1alpha1.IPClaim, len(extra))
	for i, j := range extra {
		stale[i] = &mine[j]
	}
	if err := a.deleteClaims(ctx, stale); err != nil {
		return nil, fmt.Errorf("%s: release addresses no longer approved: %w", where, err)
	}
	return out, nil
}

// Release deletes the claims of one pod: those of one interface of one
// network, of every interface of one network (iface ""), or all of them
// (network and iface ""). Claims already gone are not an error.
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
	if err := a.r.List(ctx, &list, client.MatchingLabels{v1alpha1.PodUIDLabel: ownerUID}); err != nil {
		return fmt.Errorf("list IPClaims of pod UID %s: %w", ownerUID, err)
	}
	match := func(s v1alpha1.IPClaimSpec) bool {
		return s.Pod.UID == ownerUID && (network == "" || s.Network == network) && (iface == "" || s.Interface == iface)
	}
	doomed := a.forget(ownerUID, match)
	for i := range list.Items {
		if match(list.Items[i].Spec) && !containsClaim(doomed, &list.Items[i]) {
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
// safe. It reads from the API server, never from a cache. Pass it to Sweep.
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
// claim the cache says it already holds for w, if any. fresh is the claim
// created by this call, if any (for rollback).
func (a *Allocator) ensureOne(ctx context.Context, owner Owner, network, iface string, w want, prior *v1alpha1.IPClaim) (addr netip.Addr, fresh *v1alpha1.IPClaim, err error) {
	if prior != nil {
		// The cache may still show a claim that was just released; using
		// it would hand out an address someone else may now hold.
		ok, err := a.stillExists(ctx, prior)
		if err != nil {
			return netip.Addr{}, nil, err
		}
		if ok {
			addr, _ := netip.ParseAddr(prior.Spec.Address)
			return addr, nil, nil
		}
	}
	if w.static.IsValid() {
		return a.claimStatic(ctx, owner, network, iface, w.static.Addr())
	}
	return a.claimFromPool(ctx, owner, network, iface, w)
}

// claimStatic claims one given address, reclaiming it from a dead holder.
func (a *Allocator) claimStatic(ctx context.Context, owner Owner, network, iface string, addr netip.Addr) (netip.Addr, *v1alpha1.IPClaim, error) {
	claim := newClaim(owner, network, iface, addr)
	for range 2 {
		ok, fresh, cur, err := a.tryClaim(ctx, claim)
		if err != nil || ok {
			return addr, fresh, err
		}
		freed, err := a.reclaimIfDead(ctx, cur, map[string]bool{})
		if err != nil {
			return netip.Addr{}, nil, err
		}
		if !freed {
			break
		}
	}
	return netip.Addr{}, nil, &ConflictError{Network: network, Address: addr.String(), Claim: claim.Name}
}

// taken is a claim found on an address during a pool walk.
type taken struct {
	addr  netip.Addr
	claim *v1alpha1.IPClaim
}

// claimFromPool walks the pool from the interface's hashed offset and
// claims the first address nobody holds. Only when every address is held
// does it look for holders that are dead and take over their address.
func (a *Allocator) claimFromPool(ctx context.Context, owner Owner, network, iface string, w want) (netip.Addr, *v1alpha1.IPClaim, error) {
	var held []taken
	wk := newWalk(usableHosts(w.pool), owner.UID+"/"+network+"/"+iface+"/"+w.pool.String())
	for idx, ok := wk.next(); ok; idx, ok = wk.next() {
		if err := ctx.Err(); err != nil {
			return netip.Addr{}, nil, err
		}
		addr := addrAt(w.pool, idx)
		if w.isGateway(addr) {
			continue
		}
		claim := newClaim(owner, network, iface, addr)
		var cached v1alpha1.IPClaim
		err := a.r.Get(ctx, client.ObjectKey{Name: claim.Name}, &cached)
		switch {
		case err == nil && !holds(&cached, owner.UID, network, iface):
			held = append(held, taken{addr: addr, claim: &cached})
			continue
		case err == nil:
			// Ours, though the pod's label list missed it (a cache that
			// lags our own write): reuse it if it is really there.
			ok, err := a.stillExists(ctx, &cached)
			if err != nil {
				return netip.Addr{}, nil, err
			}
			if ok {
				return addr, nil, nil
			}
		case !apierrors.IsNotFound(err):
			return netip.Addr{}, nil, fmt.Errorf("get IPClaim %q: %w", claim.Name, err)
		}
		ok, fresh, cur, err := a.tryClaim(ctx, claim)
		if err != nil || ok {
			return addr, fresh, err
		}
		held = append(held, taken{addr: addr, claim: cur})
	}
	return a.reclaimFromDead(ctx, owner, network, iface, w, held)
}

// reclaimFromDead takes over an address of w's pool whose holder is dead.
func (a *Allocator) reclaimFromDead(ctx context.Context, owner Owner, network, iface string, w want, held []taken) (netip.Addr, *v1alpha1.IPClaim, error) {
	alive := map[string]bool{}
	for _, t := range held {
		if len(alive) >= maxReclaimChecks {
			break
		}
		freed, err := a.reclaimIfDead(ctx, t.claim, alive)
		if err != nil {
			return netip.Addr{}, nil, err
		}
		if !freed {
			continue
		}
		ok, fresh, _, err := a.tryClaim(ctx, newClaim(owner, network, iface, t.addr))
		if err != nil || ok {
			return t.addr, fresh, err
		}
	}
	return netip.Addr{}, nil, &ExhaustedError{Network: network, Pool: w.poolText}
}

// reclaimIfDead deletes claim when its holder pod is dead, and reports
// whether the address is free now. alive memoizes holders already checked.
// The delete carries the claim's UID as a precondition, so a claim that
// somebody re-created on the same name in the meantime is never touched.
func (a *Allocator) reclaimIfDead(ctx context.Context, claim *v1alpha1.IPClaim, alive map[string]bool) (bool, error) {
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

// tryClaim creates claim. ok reports whether the address is now this
// interface's: fresh is claim (with the UID the server gave it) when this
// call created it, nil when the interface held it already. When the name
// is somebody else's, cur is their claim as the API server has it.
func (a *Allocator) tryClaim(ctx context.Context, claim *v1alpha1.IPClaim) (ok bool, fresh, cur *v1alpha1.IPClaim, err error) {
	s := claim.Spec
	for range maxCreateAttempts {
		err := a.c.Create(ctx, claim)
		if err == nil {
			return true, claim, nil, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return false, nil, nil, fmt.Errorf("create IPClaim %q: %w", claim.Name, err)
		}
		var existing v1alpha1.IPClaim
		err = a.c.Get(ctx, client.ObjectKey{Name: claim.Name}, &existing)
		if apierrors.IsNotFound(err) {
			continue // released between our create and our get: try again
		}
		if err != nil {
			return false, nil, nil, fmt.Errorf("get IPClaim %q: %w", claim.Name, err)
		}
		if holds(&existing, s.Pod.UID, s.Network, s.Interface) {
			return true, nil, nil, nil
		}
		return false, nil, &existing, nil
	}
	return false, nil, nil, fmt.Errorf("create IPClaim %q: the name was taken and released %d times in a row", claim.Name, maxCreateAttempts)
}

// stillExists reads claim from the API server and reports whether the very
// same object (same UID) is still there.
func (a *Allocator) stillExists(ctx context.Context, claim *v1alpha1.IPClaim) (bool, error) {
	var cur v1alpha1.IPClaim
	err := a.c.Get(ctx, client.ObjectKey{Name: claim.Name}, &cur)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get IPClaim %q: %w", claim.Name, err)
	}
	return cur.UID == claim.UID && cur.DeletionTimestamp == nil, nil
}

// claimsOf lists the claims one pod interface holds, from the cache.
func (a *Allocator) claimsOf(ctx context.Context, uid, network, iface string) ([]v1alpha1.IPClaim, error) {
	var list v1alpha1.IPClaimList
	if err := a.r.List(ctx, &list, client.MatchingLabels{v1alpha1.PodUIDLabel: uid, v1alpha1.NetworkLabel: network}); err != nil {
		return nil, fmt.Errorf("list IPClaims of pod UID %s: %w", uid, err)
	}
	mine := list.Items[:0]
	for _, c := range list.Items {
		if holds(&c, uid, network, iface) {
			mine = append(mine, c)
		}
	}
	return mine, nil
}

// deleteClaims deletes each claim if it is still the same object (UID
// precondition). Gone already, or replaced by a new claim of the same name,
// both mean the address is no longer held by that claim: not an error.
func (a *Allocator) deleteClaims(ctx context.Context, claims []*v1alpha1.IPClaim) error {
	var errs []error
	for _, claim := range claims {
		uid := claim.UID
		err := a.c.Delete(ctx, claim, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete IPClaim %q: %w", claim.Name, err))
		}
	}
	return errors.Join(errs...)
}

// holds reports whether claim belongs to this pod interface.
func holds(claim *v1alpha1.IPClaim, uid, network, iface string) bool {
	s := claim.Spec
	return s.Pod.UID == uid && s.Network == network && s.Interface == iface
}

// newClaim is the claim that reserves addr for one pod interface.
func newClaim(owner Owner, network, iface string, addr netip.Addr) *v1alpha1.IPClaim {
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: ClaimName(network, addr),
			Labels: map[string]string{
				v1alpha1.PodUIDLabel:  owner.UID,
				v1alpha1.NetworkLabel: network,
			},
		},
		Spec: v1alpha1.IPClaimSpec{
			Network:   network,
			Address:   addr.String(),
			Pod:       v1alpha1.PodReference{Namespace: owner.Namespace, Name: owner.Name, UID: owner.UID},
			Interface: iface,
		},
	}
}

// validateHolder checks what names a claim: a DNS-label network (it is part
// of the claim name and a label value), an interface name the kernel
// accepts, and a pod UID usable as a label value.
func validateHolder(owner Owner, network, iface string) error {
	if owner.Namespace == "" || owner.Name == "" {
		return fmt.Errorf("pod namespace and name are required")
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

// remember notes a claim this allocator created, for Release.
func (a *Allocator) remember(uid string, claim *v1alpha1.IPClaim) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.created[uid] = append(a.created[uid], claim)
}

// forget drops and returns the noted claims of a pod that match.
func (a *Allocator) forget(uid string, match func(v1alpha1.IPClaimSpec) bool) []*v1alpha1.IPClaim {
	a.mu.Lock()
	defer a.mu.Unlock()
	var gone, kept []*v1alpha1.IPClaim
	for _, c := range a.created[uid] {
		if match(c.Spec) {
			gone = append(gone, c)
		} else {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		delete(a.created, uid)
	} else {
		a.created[uid] = kept
	}
	return gone
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
