package dra

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
)

// Driver answers the kubelet's calls for podnet's devices on one node
// (kubeletplugin.DRAPlugin).
type Driver struct {
	NodeName string
	Preparer ClaimPreparer
	Log      logr.Logger
}

var _ kubeletplugin.DRAPlugin = (*Driver)(nil)

// PrepareResourceClaims checks each claim (CheckClaim) and hands it to the
// Preparer; a bad claim fails alone, with an error naming it.
func (d *Driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		if claim == nil {
			continue
		}
		out[claim.UID] = d.prepare(ctx, claim)
	}
	return out, nil
}

func (d *Driver) prepare(ctx context.Context, claim *resourceapi.ResourceClaim) kubeletplugin.PrepareResult {
	pc, err := CheckClaim(d.NodeName, claim)
	if err == nil {
		// The Preparer's errors name the claim.
		err = d.Preparer.Prepare(ctx, pc)
	}
	if err != nil {
		d.Log.Error(err, "prepare")
		return kubeletplugin.PrepareResult{Err: err}
	}
	res := kubeletplugin.PrepareResult{Devices: make([]kubeletplugin.Device, 0, len(pc.Devices))}
	for _, r := range pc.Devices {
		res.Devices = append(res.Devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
	}
	d.Log.V(1).Info("prepared", "claim", claim.Namespace+"/"+claim.Name, "devices", len(pc.Devices), "pods", pc.Pods)
	return res
}

// UnprepareResourceClaims forgets each claim through the Preparer.
func (d *Driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		if err := d.Preparer.Unprepare(ctx, c.UID); err != nil {
			out[c.UID] = fmt.Errorf("resource claim %s: %w", c.NamespacedName, err)
			continue
		}
		out[c.UID] = nil
	}
	return out, nil
}

// HandleError logs errors of the background work (publishing slices):
// the helper retries them, and none is a reason to stop the agent.
func (d *Driver) HandleError(_ context.Context, err error, msg string) {
	d.Log.Error(err, msg)
}

// WatchHealthStatus: podnet's devices are attachments, not hardware with
// a health of its own.
func (d *Driver) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
