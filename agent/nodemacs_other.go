//go:build !linux

package agent

import (
	"context"
	"errors"

	"podnet.io/podnet/pkg/policy"
)

// NetlinkNodeMACs needs Linux.
type NetlinkNodeMACs struct {
	NetNS string
}

// Seen implements NodeMACs.
func (NetlinkNodeMACs) Seen(context.Context, string) ([]policy.NodeMAC, error) {
	return nil, errors.New("reading a node's MACs needs linux")
}
