package localcluster

import (
	"fmt"
)

// The containerd snapshotters the local cluster and the CRI tests use.
// overlayfs is what real clusters run: a container's rootfs is an overlay
// mount over the image's layers. native copies an image's whole unpacked
// rootfs for every container (every sandbox, init and app container), which
// at a burst of pods is gigabytes of copying; it is kept only for a
// filesystem where an overlay mount fails.
const (
	SnapshotterOverlayfs = "overlayfs"
	SnapshotterNative    = "native"
)

// SnapshotterEnv names the environment variable that forces one
// snapshotter (SnapshotterOverlayfs or SnapshotterNative), e.g. to compare
// them in a bench; unset, the machine's support decides.
const SnapshotterEnv = "PODNET_SNAPSHOTTER"

// chooseSnapshotter decides the snapshotter from the forced value (the
// environment variable, "" when unset) and a probe that mounts an overlay
// (called only when the answer depends on it). note says why, for the log.
func chooseSnapshotter(forced string, probeOverlay func() error) (name, note string, err error) {
	switch forced {
	case SnapshotterNative:
		return SnapshotterNative, fmt.Sprintf("%s=%s", SnapshotterEnv, forced), nil
	case SnapshotterOverlayfs:
		if err := probeOverlay(); err != nil {
			return "", "", fmt.Errorf("%s=%s, but this machine cannot mount an overlay: %w", SnapshotterEnv, forced, err)
		}
		return SnapshotterOverlayfs, fmt.Sprintf("%s=%s", SnapshotterEnv, forced), nil
	case "":
		if err := probeOverlay(); err != nil {
			return SnapshotterNative, fmt.Sprintf("an overlay mount failed (%v), so native, which copies each image's rootfs for every container", err), nil
		}
		return SnapshotterOverlayfs, "an overlay mount works here", nil
	default:
		return "", "", fmt.Errorf("%s %q: must be %q or %q (or unset: %q when an overlay mount works)",
			SnapshotterEnv, forced, SnapshotterOverlayfs, SnapshotterNative, SnapshotterOverlayfs)
	}
}

// snapshotterOfState is the snapshotter a recorded cluster runs with:
// clusters recorded before the choice existed ran native.
func snapshotterOfState(st state) string {
	if st.Snapshotter == "" {
		return SnapshotterNative
	}
	return st.Snapshotter
}
