package sandbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// netnsIdentity stats path (following links, as /proc/…/ns/net is one)
// and refuses anything but a namespace file.
func netnsIdentity(path string) (nsIdentity, error) {
	var fs unix.Statfs_t
	if err := unix.Statfs(path, &fs); err != nil {
		return nsIdentity{}, fmt.Errorf("statfs: %w", err)
	}
	if fs.Type != unix.NSFS_MAGIC {
		return nsIdentity{}, errors.New("not a namespace file")
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsIdentity{}, fmt.Errorf("stat: %w", err)
	}
	return nsIdentity{dev: st.Dev, ino: st.Ino}, nil
}
