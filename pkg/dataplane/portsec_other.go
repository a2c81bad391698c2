//go:build !linux

package dataplane

// portRulesConn: port security is Linux-only.
type portRulesConn struct{}
