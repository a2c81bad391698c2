package dataplane

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"podnet.io/podnet/pkg/nldump"
)

// slaacWait bounds how long Apply waits for an address from router
// advertisements: the kernel solicits a router a second after the link
// comes up, and the address then spends a second in duplicate address
// detection; a router that answers solicitations late, or only sends its
// periodic advertisements, takes longer.
const slaacWait = 10 * time.Second

// SLAACError says an interface that asks for SLAAC has no address from a
// router advertisement.
type SLAACError struct {
	Interface string
	Waited    time.Duration
}

func (e *SLAACError) Error() string {
	return fmt.Sprintf("interface %q: no IPv6 address from a router advertisement within %s (slaac): does a router on the network advertise an autonomous prefix?", e.Interface, e.Waited)
}

// awaitSLAAC waits, for every interface that asks for SLAAC and has no
// usable address from a router advertisement yet, until one past duplicate
// address detection appears, or slaacWait passes; such an interface then
// counts as failed, and the next Apply waits again. A running pod's
// interface that has its address costs nothing: the plan's read shows it.
func (s *session) awaitSLAAC(ctx context.Context, p Pod, failed map[string]bool) error {
	var errs []error
	for _, ifc := range p.Interfaces {
		if !ifc.SLAAC || failed[ifc.Name] {
			continue
		}
		// The plan's read already found its address on a link this run
		// did not make anew: the steady state, no second read.
		if _, made := s.created[ifc.Name]; !made && len(s.planned.Links[ifc.Name].Autoconf) > 0 {
			continue
		}
		if err := s.awaitAutoconf(ctx, ifc.Name); err != nil {
			failed[ifc.Name] = true
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *session) awaitAutoconf(ctx context.Context, name string) error {
	l, err := s.pod.LinkByName(name)
	if err != nil {
		return fmt.Errorf("interface %q: %w", name, err)
	}
	end := time.Now().Add(slaacWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		addrs, err := nldump.Addrs(s.pod, l, netlink.FAMILY_V6)
		if err != nil {
			return fmt.Errorf("interface %q: read addresses: %w", name, err)
		}
		for _, a := range addrs {
			if a.Flags&unix.IFA_F_PERMANENT == 0 && a.Flags&(unix.IFA_F_TENTATIVE|unix.IFA_F_DADFAILED) == 0 && a.IP.IsGlobalUnicast() {
				return nil
			}
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return &SLAACError{Interface: name, Waited: slaacWait}
		}
		time.Sleep(pause)
	}
}
