package dataplane

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"podnet.io/podnet/pkg/ifsettings"
)

// sysctlRoot is where the pod's network sysctls are seen from a thread in
// its netns (Dataplane.SysctlNet).
func (s *session) sysctlRoot() string {
	if s.d.SysctlNet != "" {
		return s.d.SysctlNet
	}
	return DefaultSysctlNet
}

// observeSettings reads, for each desired interface that lists settings
// and exists, the values of those settings: the link attribute from the
// link read a moment ago, the sysctls from one thread in the pod's netns.
// Nothing is read for a pod whose interfaces list none. A value that
// cannot be read stays absent, so the plan sets it and the set says why.
func (s *session) observeSettings(p Pod, st *State) {
	type read struct{ ifc, name, path string }
	var reads []read
	for _, ifc := range p.Interfaces {
		cur, ok := st.Links[ifc.Name]
		l, known := s.links[ifc.Name]
		if !ok || !known || len(ifc.Settings) == 0 {
			continue
		}
		cur.Settings = map[string]int64{}
		st.Links[ifc.Name] = cur
		for name := range ifc.Settings {
			setting, _ := ifsettings.Lookup(name)
			if name == ifsettings.TxQueueLen {
				cur.Settings[name] = int64(l.Attrs().TxQLen)
			} else if setting.Sysctl != "" {
				reads = append(reads, read{ifc.Name, name, filepath.Join(s.sysctlRoot(), setting.Path(ifc.Name))})
			}
		}
	}
	if len(reads) == 0 {
		return
	}
	_ = inNetNS(s.podNS, func() error {
		for _, r := range reads {
			b, err := os.ReadFile(r.path)
			if err != nil {
				continue
			}
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				st.Links[r.ifc].Settings[r.name] = v
			}
		}
		return nil
	})
}

// setSetting writes one setting of a pod link: the transmit queue length
// over netlink, a sysctl from a thread in the pod's netns.
func (s *session) setSetting(l netlink.Link, name string, v int64) error {
	setting, ok := ifsettings.Lookup(name)
	if !ok {
		return ifsettings.Unknown(name)
	}
	if name == ifsettings.TxQueueLen {
		return s.pod.LinkSetTxQLen(l, int(v))
	}
	path := filepath.Join(s.sysctlRoot(), setting.Path(l.Attrs().Name))
	return inNetNS(s.podNS, func() error {
		if err := os.WriteFile(path, []byte(strconv.FormatInt(v, 10)), 0); err != nil {
			if setting.IPv6 && os.IsNotExist(err) {
				return fmt.Errorf("set %s: IPv6 is off in the pod: %w", name, err)
			}
			return fmt.Errorf("set %s: %w", name, err)
		}
		return nil
	})
}

// observeOffloads reads, for each desired interface that lists offloads
// and exists, the state of those features. Nothing is read for a pod
// whose interfaces list none; a feature that cannot be read stays absent,
// so the plan sets it and the set says why.
func (s *session) observeOffloads(p Pod, st *State) {
	var e *ethtool
	for _, ifc := range p.Interfaces {
		cur, ok := st.Links[ifc.Name]
		if !ok || len(ifc.Offloads) == 0 {
			continue
		}
		if e == nil {
			var err error
			if e, err = openEthtool(s.podNS); err != nil {
				return
			}
			defer e.close()
		}
		if got, err := e.offloads(ifc.Name, sortedKeys(ifc.Offloads)); err == nil {
			cur.Offloads = got
			st.Links[ifc.Name] = cur
		}
	}
}

// setOffloads turns a pod link's features on or off.
func (s *session) setOffloads(name string, set map[string]bool) error {
	e, err := openEthtool(s.podNS)
	if err != nil {
		return err
	}
	defer e.close()
	return e.setOffloads(name, set)
}
