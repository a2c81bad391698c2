//go:build !linux

package sandbox

import "errors"

// netnsIdentity needs Linux's namespace files.
func netnsIdentity(string) (nsIdentity, error) {
	return nsIdentity{}, errors.New("network namespaces are Linux's")
}
