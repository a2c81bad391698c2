package dataplane

import (
	"sync"
	"testing"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// TestRootInNetNSLeavesNoThreadBehind runs many short visits to a pod
// netns at once, as attaches do, and checks that afterwards the process's
// main thread is still in the netns it started in: a visit that parked the
// main thread in the pod's netns would change what /proc/self/ns/net names,
// which the agent relies on to refuse its own netns as a pod's.
func TestRootInNetNSLeavesNoThreadBehind(t *testing.T) {
	requireRoot(t)
	_, path := newNetNS(t, "pod")
	pod, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatal(err)
	}
	defer pod.Close()
	before := nsInode(t, "/proc/self/ns/net")
	var wg sync.WaitGroup
	errs := make(chan error, 2000)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				errs <- inNetNS(pod, func() error { return nil })
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if after := nsInode(t, "/proc/self/ns/net"); after != before {
		t.Fatalf("/proc/self/ns/net is inode %d after the visits, was %d: the main thread was left in the pod's netns", after, before)
	}
}

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}
