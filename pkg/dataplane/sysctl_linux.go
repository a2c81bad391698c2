package dataplane

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netns"
)

// DefaultSysctlNet is where the kernel's network sysctls are, in whichever
// netns the reading thread is in.
const DefaultSysctlNet = "/proc/sys/net"

// routerSysctls are what a pod link without AcceptRA gets, relative to the
// sysctl root. IPv6 ones are absent when IPv6 is off in the pod, which
// leaves nothing to protect.
var routerSysctls = []struct {
	path     string
	optional bool
}{
	{"ipv6/conf/%s/accept_ra", true},
	{"ipv6/conf/%s/accept_redirects", true},
	{"ipv4/conf/%s/accept_redirects", false},
}

// noRouterAdverts sets accept_ra and accept_redirects to 0 on a new pod
// link before it goes up, so that neither a router advertisement nor a
// redirect on the network moves the pod's routes, addresses or MTU. The
// kernel has no netlink request for IPv6 device settings, so the files
// under the sysctl root are written from a thread inside the pod's netns
// (a netns' sysctls are the ones its threads see). The agent's own
// /proc/sys is read-only in its container: it is given the node's
// /proc/sys/net at another path (Dataplane.SysctlNet).
func (s *session) noRouterAdverts(name string) error {
	root := s.d.SysctlNet
	if root == "" {
		root = DefaultSysctlNet
	}
	return inNetNS(s.podNS, func() error {
		for _, sc := range routerSysctls {
			p := filepath.Join(root, fmt.Sprintf(sc.path, name))
			err := os.WriteFile(p, []byte("0"), 0)
			if err != nil && !(sc.optional && errors.Is(err, fs.ErrNotExist)) {
				return fmt.Errorf("set %s to 0: %w", p, err)
			}
		}
		return nil
	})
}

// inNetNS runs f on a locked thread of its own that joins ns and then
// returns to the thread's netns. The thread goes back to the Go runtime
// only when that return succeeded; otherwise the goroutine ends with it
// locked and the runtime ends the thread (or, for the main thread, parks
// it for good), so no other goroutine ever runs in the pod's netns.
// Returning matters: a main thread left parked in a pod's netns would make
// /proc/self/ns/net name that pod's netns for the agent's whole life.
func inNetNS(ns netns.NsHandle, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := netns.Get()
		if err != nil {
			errc <- fmt.Errorf("read the thread's netns: %w", err)
			return
		}
		defer origin.Close()
		if err := netns.Set(ns); err != nil {
			errc <- fmt.Errorf("join the pod netns: %w", err)
			return
		}
		err = f()
		if netns.Set(origin) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}
