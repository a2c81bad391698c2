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

// TrackTunnels sets the point-to-point tunnels of one pod (uid, and
// "namespace/name" for messages) whose node port must accept packets
// only from their remotes (none: the pod has no such tunnel any more),
// and syncs at once when that changed: the lock is in place before the
// pod's device exists. A node has one VXLAN device per port and VNI, so
// each is reserved for one holder first: a tunnel whose port and VNI
// another pod's tunnel or a spanning bridge holds is refused with an
// error naming the holder, and the pod's earlier tunnels and every other
// lock stay as they were.
func (w *Watch) TrackTunnels(ctx context.Context, podUID, pod string, tunnels []underlay.Tunnel) error {
	w.mu.Lock()
	old, had := w.podTunnels[podUID]
	if reflect.DeepEqual(old.tunnels, tunnels) || (!had && len(tunnels) == 0) {
		w.mu.Unlock()
		return nil
	}
	holder := fmt.Sprintf("pod %q", pod)
	if err := underlay.Reserve(w.heldLocked(podUID), holder, tunnels); err != nil {
		w.mu.Unlock()
		return err
	}
	if w.podTunnels == nil {
		w.podTunnels = map[string]podTunnels{}
	}
	if len(tunnels) == 0 {
		delete(w.podTunnels, podUID)
	} else {
		w.podTunnels[podUID] = podTunnels{holder: holder, tunnels: slices.Clone(tunnels)}
	}
	w.mu.Unlock()
	return w.sync(ctx)
}

// podTunnels are one pod's point-to-point tunnels and its name for
// messages.
type podTunnels struct {
	holder  string
	tunnels []underlay.Tunnel
}

// heldLocked is who holds each port and VNI on the node but the pod of
// uid: the other pods' tunnels, the spanning bridges tracked or present,
// and the locks inherited from the table within a resync of the start.
// The caller holds mu.
func (w *Watch) heldLocked(uid string) map[underlay.Key]underlay.Holding {
	held := map[underlay.Key]underlay.Holding{}
	for _, d := range w.devs {
		h := underlay.Holding{Holder: fmt.Sprintf("spanning bridge %q", d.Bridge)}
		if d.Bridge == "" {
			h.Holder = "a podnet vxlan device of no bridge"
		}
		held[underlay.Key{Port: uint16(d.Port), VNI: uint32(d.VNI)}] = h
	}
	for b, t := range w.spans {
		held[underlay.Key{Port: uint16(t.span.Port), VNI: uint32(t.span.VNI)}] = underlay.Holding{Holder: fmt.Sprintf("spanning bridge %q", b)}
	}
	if time.Since(w.inherited.at) < w.resync() {
		for _, t := range w.inherited.tunnels {
			if k, ok := underlay.KeyOf(t); ok {
				held[k] = underlay.Holding{Holder: "a tunnel lock the node's table held when this agent started", Inherited: true, Peers: t.Peers}
			}
		}
	}
	for other, p := range w.podTunnels {
		if other == uid {
			continue
		}
		for _, t := range p.tunnels {
			if k, ok := underlay.KeyOf(t); ok {
				held[k] = underlay.Holding{Holder: p.holder}
			}
		}
	}
	return held
}

// spanHeldLocked refuses a spanning bridge's port and VNI that a pod's
// point-to-point tunnel holds. The caller holds mu.
func (w *Watch) spanHeldLocked(bridge string, span Span) error {
	held := map[underlay.Key]underlay.Holding{}
	for _, p := range w.podTunnels {
		for _, t := range p.tunnels {
			if k, ok := underlay.KeyOf(t); ok {
				held[k] = underlay.Holding{Holder: p.holder}
			}
		}
	}
	return underlay.Reserve(held, fmt.Sprintf("spanning bridge %q", bridge), []underlay.Tunnel{underlay.VXLAN(uint16(span.Port), uint32(span.VNI), underlay.IPv4, nil)})
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
func (w *Watch) trackedTunnels() (pods [][]underlay.Tunnel, inherited []underlay.Tunnel) {
	w.mu.Lock()
	defer w.mu.Unlock()
	uids := make([]string, 0, len(w.podTunnels))
	for uid := range w.podTunnels {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		pods = append(pods, w.podTunnels[uid].tunnels)
	}
	if time.Since(w.inherited.at) < w.resync() {
		inherited = w.inherited.tunnels
	} else {
		w.inherited.tunnels = nil
	}
	return pods, inherited
}
