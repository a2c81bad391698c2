package dra

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims/status,verbs=patch

// WriteStatus writes each prepared claim's network data into its
// status.devices (KEP-4817), where `kubectl get resourceclaim -o yaml`
// shows it. It applies only podnet's entries, as the field manager
// podnet-agent: the list is keyed by driver, pool and device, so other
// drivers' entries of the same claim are left alone, and a device the
// apply no longer lists (detached, no longer granted) is removed. An
// unchanged status is not written again.
func (c *ClaimNetworks) WriteStatus(ctx context.Context, w client.StatusClient, claims []*VerifiedClaim, built []dataplane.InterfaceStatus) error {
	var errs []error
	for _, p := range claims {
		body, err := claimStatusApply(p, claimDeviceStatus(p, built))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !c.needsWrite(p, body) {
			continue
		}
		obj := &resourceapi.ResourceClaim{}
		obj.Namespace, obj.Name = p.ref.Namespace, p.ref.Name
		err = w.Status().Patch(ctx, obj, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(v1alpha1.AgentName), client.ForceOwnership)
		if err != nil {
			errs = append(errs, fmt.Errorf("resource claim %s/%s: status: %w", p.ref.Namespace, p.ref.Name, err))
			continue
		}
		c.wrote(p, body)
	}
	return errors.Join(errs...)
}

// claimStatusApply is the server-side apply body of a claim's devices.
// The UID precondition keeps a write for a deleted claim off a new claim
// of the same name.
func claimStatusApply(p *VerifiedClaim, devices []resourceapi.AllocatedDeviceStatus) ([]byte, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": resourceapi.SchemeGroupVersion.String(),
		"kind":       "ResourceClaim",
		"metadata":   map[string]any{"name": p.ref.Name, "namespace": p.ref.Namespace, "uid": p.ref.UID},
		"status":     map[string]any{"devices": devices},
	})
	if err != nil {
		return nil, fmt.Errorf("resource claim %s/%s: status: %w", p.ref.Namespace, p.ref.Name, err)
	}
	return body, nil
}
