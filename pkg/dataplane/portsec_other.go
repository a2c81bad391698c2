//go:build !linux

package dataplane

// portRulesConn: port security is Linux-only.
type portRulesConn struct{}

// rawSocket: raw netlink requests are Linux-only.
type rawSocket struct{}

// podPolicy: network policy is Linux-only.
type podPolicy struct{}
