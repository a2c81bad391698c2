package macpool

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/claims"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/policy"
)

// maxProbes bounds the MACs (or slots) one attempt tries to create a claim
// on: each is one write, plus one read when taken.
const maxProbes = 32

// Allocator claims MACs by creating MACClaims. Any number of allocators
// work side by side; its memory only saves requests (see package doc).
type Allocator struct {
	// c creates, deletes, and reads a taken name's holder fresh.
	c client.Client
	// r lists a pod's own claims by label: an informer cache of the
	// node's claims is right.
	r client.Reader
	// ledger is what this allocator created, deleted and walked
	// (claims.Ledger): its resume keys are an interface.
	ledger *claims.Ledger[*v1alpha1.MACClaim]
	// podIndex: r indexes claims by claims.PodIndex.
	podIndex bool
}

// macClaims is the MACClaim kind to the claim engine.
var macClaims = claims.Kind[*v1alpha1.MACClaim]{
	Name: "MACClaim",
	New:  func() *v1alpha1.MACClaim { return &v1alpha1.MACClaim{} },
	Holder: func(c *v1alpha1.MACClaim) claims.Holder {
		return claims.Holder{UID: c.Spec.Pod.UID, Network: c.Spec.Network, Interface: c.Spec.Interface}
	},
	// MACs go before slots, so the count never dips below what is held.
	Slot: func(c *v1alpha1.MACClaim) bool { return c.Spec.Slot != nil },
}

// New returns an Allocator; c must talk to the API server directly, r may
// be a cache (nil means c).
func New(c client.Client, r client.Reader) *Allocator {
	if r == nil {
		r = c
	}
	return &Allocator{c: c, r: r, ledger: claims.NewLedger(macClaims, nil)}
}

// WithPodIndex says that r, a cache, indexes MACClaims by
// claims.PodIndex (claims.IndexByPod): a pod's claims are then listed
// through it. It returns a.
func (a *Allocator) WithPodIndex() *Allocator {
	a.podIndex = true
	return a
}

// Ensure returns the MAC of one pod interface on a network with a range:
// static when the tenant asked for one (it must lie in r), else one of r.
// It reuses what the interface holds, takes a quota slot first when r has
// a cap, and on error releases what this call created.
func (a *Allocator) Ensure(ctx context.Context, owner ipam.Owner, network, iface, static string, r v1alpha1.ApprovedMACRange) (net.HardwareAddr, error) {
	where := fmt.Sprintf("network %q interface %q of pod %s", network, iface, owner)
	span, err := policy.ParseMACSpan(r.Start, r.End)
	if err != nil {
		return nil, fmt.Errorf("%s: macRange: %w", where, err)
	}
	if err := ipam.ValidateHolder(owner, network, iface); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var want net.HardwareAddr
	if static != "" {
		if want, err = net.ParseMAC(static); err != nil || !span.Contains(static) {
			return nil, fmt.Errorf("%s: mac %q is outside the macRange %s", where, static, span)
		}
	}
	mine, err := a.claimsOf(ctx, owner.UID, network, iface)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	keep, slot, stale := sortOut(mine, span, want)
	if err := a.deleteClaims(ctx, stale); err != nil {
		return nil, fmt.Errorf("%s: release claims no longer asked for: %w", where, err)
	}
	if keep != nil {
		// A MAC held without a slot (claimed before the cap was set) is
		// never taken away.
		mac, _ := net.ParseMAC(keep.Spec.MAC)
		return mac, nil
	}
	var fresh []*v1alpha1.MACClaim
	if slot == nil && r.MaxPerNamespace > 0 {
		if slot, err = a.claimSlot(ctx, owner, network, iface, r.MaxPerNamespace); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		fresh = append(fresh, slot)
	}
	mac, err := a.claimMAC(ctx, owner, network, iface, span, want)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("%s: %w", where, err), a.deleteClaims(ctx, fresh))
	}
	return mac, nil
}

// sortOut splits an interface's claims into the MAC claim it keeps (in
// span, and the static MAC when one is asked for), its slot, and the rest.
func sortOut(mine []*v1alpha1.MACClaim, span policy.MACSpan, want net.HardwareAddr) (keep, slot *v1alpha1.MACClaim, stale []*v1alpha1.MACClaim) {
	for _, c := range mine {
		switch {
		case c.Spec.Slot != nil && slot == nil:
			slot = c
		case c.Spec.Slot == nil && keep == nil && span.Contains(c.Spec.MAC) && (want == nil || c.Spec.MAC == want.String()):
			keep = c
		default:
			stale = append(stale, c)
		}
	}
	return keep, slot, stale
}

// claimMAC claims the static MAC, or walks the span from the interface's
// hashed offset.
func (a *Allocator) claimMAC(ctx context.Context, owner ipam.Owner, network, iface string, span policy.MACSpan, want net.HardwareAddr) (net.HardwareAddr, error) {
	if want != nil {
		c, cur, err := a.try(ctx, newClaim(owner, network, iface, v1alpha1.MACClaimName(want), want.String(), nil))
		if err != nil || c != nil {
			return want, err
		}
		return nil, &ConflictError{Network: network, MAC: want.String(), Holder: holderFor(owner.Namespace, cur)}
	}
	key := owner.UID + "/" + network + "/" + iface
	size := span.Size()
	start := (hash(key) + a.ledger.ResumeAt(key)) % size
	n := min(size, maxProbes)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		mac := span.At((start + i) % size)
		c, _, err := a.try(ctx, newClaim(owner, network, iface, v1alpha1.MACClaimName(mac), mac.String(), nil))
		if err != nil {
			return nil, err
		}
		if c != nil {
			a.ledger.SetResume(key, 0)
			return mac, nil
		}
	}
	a.ledger.SetResume(key, a.ledger.ResumeAt(key)+n)
	return nil, &ExhaustedError{Network: network, Range: span.String(), Tried: int(n), Whole: n == size}
}

// claimSlot takes one of the namespace's slots of the network.
func (a *Allocator) claimSlot(ctx context.Context, owner ipam.Owner, network, iface string, most int32) (*v1alpha1.MACClaim, error) {
	start := int32(hash(owner.UID+"/"+network+"/"+iface) % uint64(most))
	for i := range min(most, maxProbes) {
		k := (start + i) % most
		c, _, err := a.try(ctx, newClaim(owner, network, iface, v1alpha1.MACSlotName(network, owner.Namespace, k), "", &k))
		if err != nil || c != nil {
			return c, err
		}
	}
	return nil, &QuotaExceededError{Network: network, Namespace: owner.Namespace, Max: most}
}

// try creates claim. It returns the claim when it is the interface's now
// (created and noted, or held already), else the holder's claim.
func (a *Allocator) try(ctx context.Context, claim *v1alpha1.MACClaim) (mine, cur *v1alpha1.MACClaim, err error) {
	ok, fresh, cur, err := a.ledger.Create(ctx, a.c, claim)
	switch {
	case err != nil || !ok:
		return nil, cur, err
	case fresh != nil:
		a.ledger.Remember(claim.Spec.Pod.UID, fresh)
		return fresh, nil, nil
	}
	return cur, nil, nil
}

// Release frees the claims of one pod interface (network and iface empty:
// every claim of the pod but those reserved for its StatefulSet, which
// outlive it), MACs before slots.
func (a *Allocator) Release(ctx context.Context, uid, network, iface string) error {
	var list v1alpha1.MACClaimList
	if err := a.r.List(ctx, &list, claims.OfPod(uid, a.podIndex, nil)...); err != nil {
		return fmt.Errorf("list MACClaims of pod UID %s: %w", uid, err)
	}
	ofPod := func(c *v1alpha1.MACClaim) bool {
		return network == "" || (c.Spec.Network == network && c.Spec.Interface == iface)
	}
	// The whole pod goes: what it holds for its StatefulSet stays.
	kept := func(c *v1alpha1.MACClaim) bool { return network == "" && c.Spec.StatefulSet != nil }
	doomed := slices.DeleteFunc(a.ledger.Forget(uid, ofPod), kept)
	for _, c := range claims.Pointers(list.Items) {
		if ofPod(c) && !kept(c) && !a.ledger.Released(c.UID) && !slices.ContainsFunc(doomed, func(o *v1alpha1.MACClaim) bool { return o.UID == c.UID }) {
			doomed = append(doomed, c)
		}
	}
	return a.deleteClaims(ctx, doomed)
}

// deleteClaims deletes claims (MACs before slots, so the count never dips
// below what is held), each only if it is still the same object.
func (a *Allocator) deleteClaims(ctx context.Context, cs []*v1alpha1.MACClaim) error {
	return a.ledger.Delete(ctx, a.c, cs, nil)
}

// claimsOf lists what one pod interface holds: the cache's claims less
// those deleted lately, and those created here that the cache may not
// show yet (claims.Ledger.Mine).
func (a *Allocator) claimsOf(ctx context.Context, uid, network, iface string) ([]*v1alpha1.MACClaim, error) {
	var list v1alpha1.MACClaimList
	if err := a.r.List(ctx, &list, claims.OfPod(uid, a.podIndex, client.MatchingLabels{v1alpha1.NetworkLabel: network})...); err != nil {
		return nil, fmt.Errorf("list MACClaims of pod UID %s: %w", uid, err)
	}
	return a.ledger.Mine(uid, claims.Pointers(list.Items), func(c *v1alpha1.MACClaim) bool { return holds(c, uid, network, iface) }), nil
}

// holderFor words who holds a claim for a pod of namespace ns: another
// tenant's pod name is not the asker's to read.
func holderFor(ns string, cur *v1alpha1.MACClaim) string {
	if cur != nil && cur.Spec.Pod.Namespace == ns {
		return fmt.Sprintf("pod %s (interface %s)", cur.Spec.Pod.Name, cur.Spec.Interface)
	}
	return "a pod of another namespace"
}

func holds(c *v1alpha1.MACClaim, uid, network, iface string) bool {
	s := c.Spec
	return s.Pod.UID == uid && s.Network == network && s.Interface == iface
}

func newClaim(owner ipam.Owner, network, iface, name, mac string, slot *int32) *v1alpha1.MACClaim {
	c := &v1alpha1.MACClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				v1alpha1.PodUIDLabel:    owner.UID,
				v1alpha1.NetworkLabel:   network,
				v1alpha1.NodeLabel:      owner.Node,
				v1alpha1.NamespaceLabel: owner.Namespace,
			},
		},
		Spec: v1alpha1.MACClaimSpec{
			Network: network, MAC: mac, Slot: slot, Interface: iface,
			Pod:         v1alpha1.PodReference{Namespace: owner.Namespace, Name: owner.Name, UID: owner.UID},
			StatefulSet: owner.Reservation.DeepCopy(),
		},
	}
	if owner.Reservation != nil {
		c.Labels[v1alpha1.StatefulSetLabel] = owner.Reservation.UID
		c.Labels[v1alpha1.ReservedPodLabel] = v1alpha1.ReservedPodKey(owner.Namespace, owner.Name)
	}
	return c
}

func claimNameOf(mac string) string {
	m, err := net.ParseMAC(mac)
	if err != nil {
		return mac
	}
	return v1alpha1.MACClaimName(m)
}

func hash(key string) uint64 {
	sum := sha256.Sum256([]byte(key))
	return binary.BigEndian.Uint64(sum[:8])
}
