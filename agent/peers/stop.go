package peers

import (
	"context"
	"fmt"

	"podnet.io/podnet/pkg/underlay"
)

// Stop takes the overlays off the node for an uninstall: from now on no
// sync touches flood lists, the tunnel table or the annotation; the node's
// tunnel table is deleted and its VNI annotation removed. The VXLAN
// devices themselves go with their bridges (the dataplane's part).
// Stopping again is harmless.
func (w *Watch) Stop(ctx context.Context) error {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.stopped = true
	w.mu.Lock()
	w.spans = nil
	w.mu.Unlock()
	if err := w.Lock.Apply(underlay.Ruleset{}); err != nil {
		return fmt.Errorf("delete the tunnel table: %w", err)
	}
	w.applied = nil
	nodes, err := w.list(ctx)
	if err != nil {
		return err
	}
	return w.publish(ctx, nodes, nil)
}

// Resume undoes Stop (the uninstall mark was taken back): the next sync
// writes the table and the annotation again from what the node carries.
func (w *Watch) Resume() {
	w.syncMu.Lock()
	defer w.syncMu.Unlock()
	w.stopped = false
}
