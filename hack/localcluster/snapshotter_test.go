package localcluster

import (
	"errors"
	"strings"
	"testing"
)

func TestChooseSnapshotter(t *testing.T) {
	works := func() error { return nil }
	fails := func() error { return errors.New("mount overlay: invalid argument") }
	for _, tc := range []struct {
		name, forced string
		probe        func() error
		want         string
		wantErr      string // substring; "" for no error
		wantNote     string // substring of the note
	}{
		{name: "overlay works", probe: works, want: SnapshotterOverlayfs, wantNote: "overlay mount works"},
		{name: "overlay fails: fall back", probe: fails, want: SnapshotterNative, wantNote: "invalid argument"},
		{name: "forced native skips the probe", forced: "native", probe: nil, want: SnapshotterNative, wantNote: SnapshotterEnv},
		{name: "forced overlayfs", forced: "overlayfs", probe: works, want: SnapshotterOverlayfs, wantNote: SnapshotterEnv},
		{name: "forced overlayfs that fails", forced: "overlayfs", probe: fails, wantErr: "cannot mount an overlay"},
		{name: "unknown value", forced: "overlay", probe: works, wantErr: `PODNET_SNAPSHOTTER "overlay": must be "overlayfs" or "native"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, note, err := chooseSnapshotter(tc.forced, tc.probe)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !strings.Contains(note, tc.wantNote) {
				t.Errorf("got %q (%s), want %q with a note containing %q", got, note, tc.want, tc.wantNote)
			}
		})
	}
}

func TestSnapshotterOfState(t *testing.T) {
	if got := snapshotterOfState(state{}); got != SnapshotterNative {
		t.Errorf("cluster recorded without a snapshotter: %q, want %q (what such clusters ran)", got, SnapshotterNative)
	}
	if got := snapshotterOfState(state{Snapshotter: SnapshotterOverlayfs}); got != SnapshotterOverlayfs {
		t.Errorf("recorded overlayfs: got %q", got)
	}
}

func TestParseMountinfo(t *testing.T) {
	const info = `22 1 253:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
101 22 0:50 / /c/x/state/task/k8s.io/abc/rootfs rw,relatime shared:60 - overlay overlay rw,lowerdir=/c/x/root/1/fs,upperdir=/c/x/root/2/fs,workdir=/c/x/root/2/work
102 22 0:51 / /c/x/state/sandboxes/abc/shm rw,nosuid - tmpfs shm rw,size=65536k
103 22 0:52 / /c/xy rw - tmpfs tmpfs rw
104 22 0:53 / /c/x/kubelet/pods/u/volumes/a\040b rw - tmpfs tmpfs rw
105 22 0:54 / /c/x rw - tmpfs tmpfs rw
`
	got, err := parseMountinfo(strings.NewReader(info), "/c/x")
	if err != nil {
		t.Fatal(err)
	}
	want := []mountEntry{
		{"/c/x/state/task/k8s.io/abc/rootfs", "overlay"},
		{"/c/x/kubelet/pods/u/volumes/a b", "tmpfs"},
		{"/c/x/state/sandboxes/abc/shm", "tmpfs"},
		{"/c/x", "tmpfs"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %v, want %v (longest path first, so a child before its parent; /c/xy is not under /c/x)", i, got[i], want[i])
		}
	}
}
