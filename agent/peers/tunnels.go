package peers

import (
	"context"
	"reflect"
	"slices"
	"sort"

	"podnet.io/podnet/pkg/underlay"
)

// TrackTunnels sets the point-to-point tunnels of one pod whose node port
// must accept packets only from their remotes (none: the pod has no
// such tunnel any more), and syncs at once when that changed: the lock is
// in place before the pod's device exists. The node's table holds the
// spanning networks' tunnels and these, merged by port and VNI.
func (w *Watch) TrackTunnels(ctx context.Context, podUID string, tunnels []underlay.Tunnel) error {
	w.mu.Lock()
	old, had := w.podTunnels[podUID]
	if reflect.DeepEqual(old, tunnels) || (!had && len(tunnels) == 0) {
		w.mu.Unlock()
		return nil
	}
	if w.podTunnels == nil {
		w.podTunnels = map[string][]underlay.Tunnel{}
	}
	if len(tunnels) == 0 {
		delete(w.podTunnels, podUID)
	} else {
		w.podTunnels[podUID] = slices.Clone(tunnels)
	}
	w.mu.Unlock()
	return w.sync(ctx)
}

// trackedTunnels are the pods' point-to-point tunnels, in pod order.
func (w *Watch) trackedTunnels() []underlay.Tunnel {
	w.mu.Lock()
	defer w.mu.Unlock()
	uids := make([]string, 0, len(w.podTunnels))
	for uid := range w.podTunnels {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	var out []underlay.Tunnel
	for _, uid := range uids {
		out = append(out, w.podTunnels[uid]...)
	}
	return out
}
