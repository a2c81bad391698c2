package macpool

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// Adopt takes over the MACClaims (MAC and quota slot) reserved for owner's
// StatefulSet by the earlier pod of owner's name, for one interface, with
// the rule of ipam.MayAdopt and the same single update per claim as
// ipam's Adopt (resourceVersion precondition, the MAC never free in
// between). Ensure then finds them as the interface's own.
func (a *Allocator) Adopt(ctx context.Context, owner ipam.Owner, network, iface string) (int, error) {
	if owner.Reservation == nil {
		return 0, nil
	}
	// An interface that holds claims already attached before: no read.
	if mine, err := a.claimsOf(ctx, owner.UID, network, iface); err != nil || len(mine) > 0 {
		return 0, err
	}
	var list v1alpha1.MACClaimList
	if err := a.c.List(ctx, &list, client.MatchingLabels{v1alpha1.ReservedPodLabel: v1alpha1.ReservedPodKey(owner.Namespace, owner.Name)}); err != nil {
		return 0, fmt.Errorf("list MACClaims reserved for pod %s: %w", owner, err)
	}
	n := 0
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		res := ipam.Reserved{Pod: c.Spec.Pod, Network: c.Spec.Network, Interface: c.Spec.Interface, Reservation: c.Spec.StatefulSet}
		if !ipam.MayAdopt(res, owner, owner.Reservation, network, iface) {
			continue
		}
		moved := c.DeepCopy()
		if moved.Labels == nil {
			moved.Labels = map[string]string{}
		}
		ipam.TakeOver(moved.Labels, &moved.Spec.Pod, owner)
		if err := a.c.Update(ctx, moved); err != nil {
			errs = append(errs, fmt.Errorf("take over MACClaim %q for pod %s: %w", c.Name, owner, err))
			continue
		}
		a.ledger.Remember(owner.UID, moved)
		n++
	}
	return n, errors.Join(errs...)
}
