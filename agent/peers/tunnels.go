package peers

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"time"

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

// inheritedTunnels are the locks of pods' tunnels found in the node's
// table at the first sync: a restarted agent's first table would
// otherwise drop them until it has reconciled those pods again, leaving
// their ports open. They are kept for one resync, by which time the pods
// that still have the tunnels have tracked them again.
type inheritedTunnels struct {
	read    bool
	tunnels []underlay.Tunnel
	at      time.Time
}

// tunnelReader reads the pods' tunnel locks back from the node's table;
// *underlay.Table is one.
type tunnelReader interface {
	PointToPointTunnels() ([]underlay.Tunnel, error)
}

// inherit reads the table's pod tunnel locks once, before the first table
// this agent writes. The caller holds syncMu.
func (w *Watch) inherit() error {
	if w.inherited.read {
		return nil
	}
	if r, ok := w.Lock.(tunnelReader); ok {
		ts, err := r.PointToPointTunnels()
		if err != nil {
			return fmt.Errorf("read the tunnel locks of the node's table: %w", err)
		}
		w.mu.Lock()
		w.inherited.tunnels, w.inherited.at = ts, time.Now()
		w.mu.Unlock()
	}
	w.inherited.read = true
	return nil
}

// trackedTunnels are the pods' point-to-point tunnels, in pod order, and
// those inherited from the table within a resync of the first sync.
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
	if time.Since(w.inherited.at) < w.resync() {
		out = append(out, w.inherited.tunnels...)
	} else {
		w.inherited.tunnels = nil
	}
	return out
}
