//go:build !linux

package nodecarry

import (
	"context"
	"errors"

	"podnet.io/podnet/pkg/carry"
)

// NetlinkHost needs Linux.
type NetlinkHost struct {
	NetNS   string
	Modules Modules
}

var errNotLinux = errors.New("nodecarry: probing a node needs linux")

// Probe implements Host.
func (NetlinkHost) Probe(context.Context, []carry.Need) (carry.Node, error) {
	return carry.Node{}, errNotLinux
}

// Watch implements Host.
func (NetlinkHost) Watch(context.Context, func(Change)) error { return errNotLinux }

func release() string { return "" }
