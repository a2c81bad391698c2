package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The ethtool features (offloads) of a pod link, through the SIOCETHTOOL
// ioctl (linux/ethtool.h): the names of the device's features, their state,
// and a change of some. The ioctl works on every kernel podnet runs on,
// and its socket is opened in the pod's netns, where the link is.
const (
	ethtoolGStrings  = 0x1b
	ethtoolGSSetInfo = 0x37
	ethtoolGFeatures = 0x3a
	ethtoolSFeatures = 0x3b
	ethSSFeatures    = 4
	ethGStringLen    = 32
)

// ifreqData is struct ifreq with its union holding a pointer.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtool is an ioctl socket in a pod's netns.
type ethtool struct{ fd int }

func openEthtool(ns netns.NsHandle) (*ethtool, error) {
	fd := -1
	open := func() error {
		var err error
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		return err
	}
	var err error
	if ns.IsOpen() {
		err = inNetNS(ns, open)
	} else {
		// The node is the netns this process runs in (the agent's
		// hostNetwork): no thread needs to move.
		err = open()
	}
	if err != nil {
		return nil, fmt.Errorf("ethtool socket: %w", err)
	}
	return &ethtool{fd: fd}, nil
}

func (e *ethtool) close() { unix.Close(e.fd) }

func (e *ethtool) ioctl(ifname string, data unsafe.Pointer) (uintptr, error) {
	var ifr ifreqData
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = data
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(e.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// featureNames are the device's feature names, by bit.
func (e *ethtool) featureNames(ifname string) ([]string, error) {
	info := struct {
		cmd, reserved uint32
		mask          uint64
		count         uint32
	}{cmd: ethtoolGSSetInfo, mask: 1 << ethSSFeatures}
	if _, err := e.ioctl(ifname, unsafe.Pointer(&info)); err != nil {
		return nil, fmt.Errorf("feature count: %w", err)
	}
	if info.mask == 0 || info.count == 0 {
		return nil, nil
	}
	buf := make([]byte, 12+int(info.count)*ethGStringLen)
	*(*[3]uint32)(unsafe.Pointer(&buf[0])) = [3]uint32{ethtoolGStrings, ethSSFeatures, info.count}
	if _, err := e.ioctl(ifname, unsafe.Pointer(&buf[0])); err != nil {
		return nil, fmt.Errorf("feature names: %w", err)
	}
	names := make([]string, info.count)
	for i := range names {
		s := buf[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if j := bytes.IndexByte(s, 0); j >= 0 {
			s = s[:j]
		}
		names[i] = string(s)
	}
	return names, nil
}

// features reads the state of every feature: active bits by feature
// index, in blocks of 32.
func (e *ethtool) features(ifname string, count int) (active []uint32, err error) {
	blocks := (count + 31) / 32
	buf := make([]uint32, 2+4*blocks)
	buf[0], buf[1] = ethtoolGFeatures, uint32(blocks)
	if _, err := e.ioctl(ifname, unsafe.Pointer(&buf[0])); err != nil {
		return nil, fmt.Errorf("read features: %w", err)
	}
	active = make([]uint32, blocks)
	for b := range blocks {
		active[b] = buf[2+4*b+2] // available, requested, active, never_changed
	}
	return active, nil
}

// offloads reads the state of the named features; a name the device
// does not have is left out.
func (e *ethtool) offloads(ifname string, want []string) (map[string]bool, error) {
	names, err := e.featureNames(ifname)
	if err != nil {
		return nil, err
	}
	return e.offloadsNamed(ifname, names, want)
}

// offloadsNamed is offloads with the device's feature names already read.
func (e *ethtool) offloadsNamed(ifname string, names, want []string) (map[string]bool, error) {
	active, err := e.features(ifname, len(names))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, w := range want {
		if i := slices.Index(names, w); i >= 0 {
			out[w] = active[i/32]&(1<<(i%32)) != 0
		}
	}
	return out, nil
}

// setOffloads turns the named features on or off, then reads them back:
// a device may refuse a change silently (a fixed feature).
func (e *ethtool) setOffloads(ifname string, set map[string]bool) error {
	names, err := e.featureNames(ifname)
	if err != nil {
		return err
	}
	blocks := (len(names) + 31) / 32
	buf := make([]uint32, 2+2*blocks)
	buf[0], buf[1] = ethtoolSFeatures, uint32(blocks)
	var errs []error
	for _, name := range sortedKeys(set) {
		i := slices.Index(names, name)
		if i < 0 {
			errs = append(errs, fmt.Errorf("offload %s: not a feature of this device (ethtool -k lists them)", name))
			continue
		}
		buf[2+2*(i/32)] |= 1 << (i % 32) // valid
		if set[name] {
			buf[2+2*(i/32)+1] |= 1 << (i % 32) // requested
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := e.ioctl(ifname, unsafe.Pointer(&buf[0])); err != nil {
		return fmt.Errorf("set offloads: %w", err)
	}
	got, err := e.offloadsNamed(ifname, names, sortedKeys(set))
	if err != nil {
		return err
	}
	for _, name := range sortedKeys(set) {
		if got[name] != set[name] {
			errs = append(errs, fmt.Errorf("offload %s: the device keeps it %s (fixed)", name, onOff(got[name])))
		}
	}
	return errors.Join(errs...)
}
