//go:build !linux

package nri

import "errors"

// linksIn needs Linux network namespaces.
func linksIn(string) (map[string]bool, error) {
	return nil, errors.New("network namespaces are Linux only")
}
