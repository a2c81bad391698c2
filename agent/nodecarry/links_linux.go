package nodecarry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// linkEvent is what Watch reads of one link message: its index, its name
// and whether it went.
type linkEvent struct {
	index   int32
	name    string
	deleted bool
}

// errDumpInterrupted: the listing of the existing links was cut short by a
// change, so some names from before are unknown.
var errDumpInterrupted = errors.New("link listing interrupted")

// subscribeLinks streams the namespace's link messages (ns nil: the
// caller's): the existing links first, then every change, until done is
// closed. Only the index, the name and whether the link went are read of
// each message: the netlink library's subscription parses each link whole
// (statistics and every attribute), and a pod start alone changes its
// node end several times (created, marked, into its bridge, up). onErr
// gets what goes wrong; the channel is closed when the socket fails.
func subscribeLinks(ns *netns.NsHandle, done <-chan struct{}, onErr func(error)) (<-chan linkEvent, error) {
	target := netns.None()
	if ns != nil {
		target = *ns
	}
	s, err := nl.SubscribeAt(target, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_LINK)
	if err != nil {
		return nil, err
	}
	go func() {
		<-done
		s.Close()
	}()
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, unix.NLM_F_DUMP)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	if err := s.Send(req); err != nil {
		return nil, err
	}
	out := make(chan linkEvent, 64)
	go func() {
		defer close(out)
		for {
			msgs, from, err := s.Receive()
			if err != nil {
				onErr(fmt.Errorf("receive: %w", err))
				return
			}
			if from.Pid != nl.PidKernel {
				continue
			}
			for _, m := range msgs {
				if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
					onErr(errDumpInterrupted)
				}
				switch m.Header.Type {
				case unix.NLMSG_DONE:
				case unix.NLMSG_ERROR:
					if len(m.Data) >= 4 {
						if errno := int32(binary.NativeEndian.Uint32(m.Data[:4])); errno != 0 {
							onErr(fmt.Errorf("error message: %w", syscall.Errno(-errno)))
						}
					}
				case unix.RTM_NEWLINK, unix.RTM_DELLINK:
					ev, ok := parseLinkEvent(m.Header.Type, m.Data)
					if !ok {
						continue
					}
					select {
					case out <- ev:
					case <-done:
						return
					}
				}
			}
		}
	}()
	return out, nil
}

// parseLinkEvent reads a link message's index and IFLA_IFNAME.
func parseLinkEvent(typ uint16, data []byte) (linkEvent, bool) {
	if len(data) < unix.SizeofIfInfomsg {
		return linkEvent{}, false
	}
	ev := linkEvent{index: nl.DeserializeIfInfomsg(data).Index, deleted: typ == unix.RTM_DELLINK}
	// Walked in place: every change of every link of the node comes here.
	named := false
	err := nldump.WalkAttrs(data[unix.SizeofIfInfomsg:], func(typ uint16, v []byte) {
		if typ == unix.IFLA_IFNAME && !named {
			ev.name, named = unix.ByteSliceToString(v), true
		}
	})
	if err != nil || !named {
		return linkEvent{}, false
	}
	return ev, true
}
