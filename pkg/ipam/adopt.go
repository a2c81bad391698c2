package ipam

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// Adopt takes over the claims (addresses and quota slots) reserved for
// owner's StatefulSet by the earlier pod of owner's name, for one
// interface, before Ensure: Ensure then finds them as the interface's
// own and returns the same addresses. owner.Reservation must be the pod's reservation
// (ReservationOf); without one nothing is taken over. The claims are found with
// a live list by ReservedPodLabel (they may have been made on any node, so
// the agent's cache of its node's claims does not hold them); this costs
// one read per attach of a pod whose network keeps addresses. Each
// takeover is an update carrying the claim's resourceVersion, which
// writes the new pod UID and node into it: the address is never free in
// between, and of two racing writers one wins.
func (a *Allocator) Adopt(ctx context.Context, owner Owner, network, iface string) (int, error) {
	if owner.Reservation == nil {
		return 0, nil
	}
	// An interface that holds claims already attached before: no read.
	if mine, err := a.claimsOf(ctx, owner.UID, network, iface); err != nil || len(mine) > 0 {
		return 0, err
	}
	var list v1alpha1.IPClaimList
	if err := a.c.List(ctx, &list, client.MatchingLabels{v1alpha1.ReservedPodLabel: v1alpha1.ReservedPodKey(owner.Namespace, owner.Name)}); err != nil {
		return 0, fmt.Errorf("list IPClaims reserved for pod %s: %w", owner, err)
	}
	n := 0
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		if !MayAdopt(reservedOf(c), owner, owner.Reservation, network, iface) {
			continue
		}
		moved := c.DeepCopy()
		if moved.Labels == nil {
			moved.Labels = map[string]string{}
		}
		TakeOver(moved.Labels, &moved.Spec.Pod, owner)
		if err := a.c.Update(ctx, moved); err != nil {
			errs = append(errs, fmt.Errorf("take over IPClaim %q for pod %s: %w", c.Name, owner, err))
			continue
		}
		a.ledger.Remember(owner.UID, moved)
		n++
	}
	return n, errors.Join(errs...)
}

// TakeOver rewrites a reserved claim's holder to owner: its pod UID and the
// labels that follow it (pod UID, node). Nothing else of a claim may
// change (the CRD's rule).
func TakeOver(l map[string]string, pod *v1alpha1.PodReference, owner Owner) {
	l[v1alpha1.PodUIDLabel] = owner.UID
	l[v1alpha1.NodeLabel] = owner.Node
	pod.UID = owner.UID
}

// reservationLabels adds the labels of a reserved claim.
func reservationLabels(l map[string]string, owner Owner) {
	if owner.Reservation == nil {
		return
	}
	l[v1alpha1.StatefulSetLabel] = owner.Reservation.UID
	l[v1alpha1.ReservedPodLabel] = v1alpha1.ReservedPodKey(owner.Namespace, owner.Name)
}
