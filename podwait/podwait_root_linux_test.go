package podwait

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
)

// throwawayNetNS creates a named network namespace and removes it when the
// test ends; it returns its path.
func throwawayNetNS(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	name := "pntest-wait-" + hex.EncodeToString(b)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	return "/var/run/netns/" + name
}

// TestRootWaitSeesInterfacesComeUp runs Wait inside a throwaway namespace
// while another goroutine creates net1 down and brings it up later: Wait
// returns only after the interface is up.
func TestRootWaitSeesInterfacesComeUp(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootWaitSeesInterfacesComeUp creates network namespaces: run it as root")
	}
	path := throwawayNetNS(t)
	h, err := netlink.NewHandleAt(mustNS(t, path))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	upAt := make(chan time.Time, 1)
	// The goroutine must end before the handle closes: the kernel brings
	// net1 up before it acknowledges, so Wait can return while LinkSetUp
	// still reads its acknowledgement from h's socket.
	var wg sync.WaitGroup
	wg.Add(1)
	defer wg.Wait()
	go func() {
		defer wg.Done()
		time.Sleep(200 * time.Millisecond)
		d := veth("net1")
		if err := h.LinkAdd(d); err != nil {
			t.Errorf("add net1: %v", err)
			return
		}
		time.Sleep(300 * time.Millisecond)
		upAt <- time.Now()
		if err := h.LinkSetUp(d); err != nil {
			t.Errorf("up net1: %v", err)
		}
	}()
	var waitErr error
	var done time.Time
	err = ns.WithNetNSPath(path, func(ns.NetNS) error {
		waitErr = Wait(context.Background(), []string{"net1"}, 10*time.Second, 20*time.Millisecond)
		done = time.Now()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if waitErr != nil {
		t.Fatalf("Wait: %v", waitErr)
	}
	select {
	case up := <-upAt:
		if done.Before(up) {
			t.Fatalf("Wait returned at %v, before net1 was brought up at %v", done, up)
		}
	default:
		t.Fatal("Wait returned before net1 was brought up")
	}
}

// TestRootWaitTimesOutNamingMissing: a down interface and an absent one
// are both named in the timeout error.
func TestRootWaitTimesOutNamingMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootWaitTimesOutNamingMissing creates network namespaces: run it as root")
	}
	path := throwawayNetNS(t)
	h, err := netlink.NewHandleAt(mustNS(t, path))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := h.LinkAdd(veth("net1")); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	if err := ns.WithNetNSPath(path, func(ns.NetNS) error {
		waitErr = Wait(context.Background(), []string{"net1", "net2"}, 300*time.Millisecond, 20*time.Millisecond)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var te *TimeoutError
	if !errors.As(waitErr, &te) {
		t.Fatalf("Wait err = %v, want a *TimeoutError", waitErr)
	}
	if want := []string{"net1 (down)", "net2 (absent)"}; !slices.Equal(te.Pending, want) {
		t.Fatalf("pending = %v, want %v", te.Pending, want)
	}
}
