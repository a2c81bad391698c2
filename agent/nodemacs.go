package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// NodeMACs reads the MACs in use on the node, for policy.CheckNodeMAC.
type NodeMACs interface {
	// Seen lists the MACs of the node's links and those its bridges'
	// FDBs hold, but for the ports of pod uid (its own interfaces on a
	// later attach).
	Seen(ctx context.Context, uid string) ([]policy.NodeMAC, error)
}

// checkNodeMACs refuses an approval one of whose interfaces would carry a
// MAC the node uses already: a bridge's, an uplink's, or one its bridges
// learned from another port (another pod, a router beyond the uplink).
// The claim made the MAC the interface's alone among pods that hold one;
// this is for the MACs no claim holds. A MAC of a range is checked too: an
// admin's range may overlap the node's own MACs.
func (r *Reconciler) checkNodeMACs(ctx context.Context, uid string, a *v1alpha1.Approval) error {
	if !slices.ContainsFunc(a.Interfaces, func(ai v1alpha1.ApprovedInterface) bool { return ai.MAC != "" }) {
		return nil
	}
	if r.NodeMACs == nil {
		return errors.New("the agent cannot read the node's MACs to check the pod's mac")
	}
	seen, err := r.NodeMACs.Seen(ctx, uid)
	if err != nil {
		return fmt.Errorf("read the node's MACs to check the pod's mac: %w", err)
	}
	var errs []error
	for i, ai := range a.Interfaces {
		if ai.MAC == "" {
			continue
		}
		if e := policy.CheckNodeMAC(field.NewPath("interfaces").Index(i).Child("mac"), ai.MAC, seen); e != nil {
			errs = append(errs, fmt.Errorf("interface %q network %q: %w", ai.Interface, ai.Network, e))
		}
	}
	return errors.Join(errs...)
}
