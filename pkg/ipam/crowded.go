package ipam

import (
	"context"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// claimedIn returns the addresses of w's pool that the claims of w's
// address space hold, on every node. It is the only read of other nodes'
// claims the allocator makes, and it makes it only when every address an
// attempt tried was held: in a pool so crowded, one list is far cheaper
// than walking it create by create (a pool with one free address in 1,000
// would take hundreds of refused creates). The list is served from the API
// server's watch cache (resourceVersion "0"), so it reads no etcd and may
// lag a moment: a claim it misses costs one refused create, and one
// deleted a moment ago only makes the pool look full until the next
// attempt. The create stays the reservation either way.
//
// Attempts on the same pool that need the list at the same time share one
// (singleflight): in a crowded pool every worker of the agent would list
// it otherwise, and a large pool's list is large. The set returned is
// shared and must not be changed.
func (a *Allocator) claimedIn(ctx context.Context, w want) (map[netip.Addr]bool, error) {
	v, err, _ := a.lists.Do(w.space+"/"+w.pool.String(), func() (any, error) { return a.listClaimed(ctx, w) })
	if err != nil {
		return nil, err
	}
	return v.(map[netip.Addr]bool), nil
}

// listClaimed makes claimedIn's list.
func (a *Allocator) listClaimed(ctx context.Context, w want) (map[netip.Addr]bool, error) {
	var list v1alpha1.IPClaimList
	opts := &client.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.AddressSpaceLabel: w.space}), Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	if err := a.c.List(ctx, &list, opts); err != nil {
		return nil, fmt.Errorf("list IPClaims of address space %q: %w", w.space, err)
	}
	claimed := make(map[netip.Addr]bool, len(list.Items))
	for i := range list.Items {
		s := list.Items[i].Spec
		if s.Slot != nil {
			continue
		}
		if addr, err := netip.ParseAddr(s.Address); err == nil && w.pool.Contains(addr) {
			claimed[addr] = true
		}
	}
	return claimed, nil
}

// slotsTaken returns the quota slots of namespace in w's address space and
// IP family that are held, on every node: the list claimedIn makes for
// addresses, made when every slot an attempt tried was held, and as small
// as the namespace's claims in the space.
func (a *Allocator) slotsTaken(ctx context.Context, namespace string, w want) (map[uint64]bool, error) {
	var list v1alpha1.IPClaimList
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.AddressSpaceLabel: w.space, v1alpha1.NamespaceLabel: namespace})
	opts := &client.ListOptions{LabelSelector: sel, Raw: &metav1.ListOptions{ResourceVersion: "0"}}
	if err := a.c.List(ctx, &list, opts); err != nil {
		return nil, fmt.Errorf("list IPClaims of namespace %q in address space %q: %w", namespace, w.space, err)
	}
	taken := map[uint64]bool{}
	for i := range list.Items {
		if s := list.Items[i].Spec; s.Slot != nil && *s.Slot >= 0 && sameQuota(&list.Items[i], w) {
			taken[uint64(*s.Slot)] = true
		}
	}
	return taken, nil
}
