package dataplane

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"testing"

	"github.com/vishvananda/netns"
)

// TestRootDefaultHostNetNS runs a Dataplane with HostNetNS "" (the agent's
// setting: the node is the process' own netns) on a thread moved into a
// throwaway node netns. The thread is never unlocked, so Go ends it with
// its goroutine and no other code ever runs in that netns.
func TestRootDefaultHostNetNS(t *testing.T) {
	requireRoot(t)
	node, _ := newNetNS(t, "node")
	podNS, p := newPod(t)
	p.Interfaces = []Interface{{Name: "net1", Kind: KindBridge, Bridge: "pnbr-d", Addresses: []net.IPNet{cidr(t, "fd00:d::1/64")}}}

	attached := make(chan error, 1)
	resume := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		done <- attachFromNode(p, node, attached, resume)
	}()
	if err := <-attached; err != nil {
		t.Fatal(err)
	}
	nodeLinks := linkNames(t, node)
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{hostName(p.UID, "net1"), "pnbr-d"}
	slices.Sort(want)
	if !slices.Equal(nodeLinks, want) {
		t.Fatalf("node links while attached: %v, want %v", nodeLinks, want)
	}
	if got := linkNames(t, node); len(got) != 0 {
		t.Fatalf("node links after detach: %v", got)
	}
	if got := linkNames(t, podNS); len(got) != 0 {
		t.Fatalf("pod links after detach: %v", got)
	}
}

// attachFromNode enters the node netns on the calling, locked thread,
// applies p with a default Dataplane and reports on attached; once resume
// closes it detaches (netns "" : by marks only) and collects garbage.
func attachFromNode(p Pod, node string, attached chan<- error, resume <-chan struct{}) error {
	err := func() error {
		target, err := netns.GetFromName(node)
		if err != nil {
			return err
		}
		defer target.Close()
		return netns.Set(target)
	}()
	if err != nil {
		attached <- fmt.Errorf("enter node netns: %w", err)
		return nil
	}
	d := &Dataplane{}
	defer d.Close()
	ctx := context.Background()
	st, err := d.Apply(ctx, p)
	if err == nil && len(st) != 1 {
		err = fmt.Errorf("statuses %+v", st)
	}
	if err == nil {
		if steps, planErr := d.Plan(ctx, p); planErr != nil || len(steps) != 0 {
			err = errors.Join(planErr, fmt.Errorf("second plan: %v", steps))
		}
	}
	attached <- err
	if err != nil {
		return nil
	}
	<-resume
	if err := d.Detach(ctx, p.UID, ""); err != nil {
		return err
	}
	_, err = d.CollectGarbage(ctx, func(string) bool { return false })
	return err
}
