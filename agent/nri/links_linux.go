package nri

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"podnet.io/podnet/pkg/nldump"
)

// linksIn are the names of the links in the netns at path. It reads the
// namespace through a netlink socket opened in it: the calling thread
// never changes namespace.
func linksIn(path string) (map[string]bool, error) {
	if path == "" {
		return nil, errors.New("the pod has no network namespace of its own")
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return nil, fmt.Errorf("netns %q: %w", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("netns %q: netlink: %w", path, err)
	}
	defer h.Close()
	links, err := nldump.Links(h)
	if err != nil {
		return nil, fmt.Errorf("netns %q: list links: %w", path, err)
	}
	names := make(map[string]bool, len(links))
	for _, l := range links {
		names[l.Attrs().Name] = true
	}
	return names, nil
}
