// Package rules holds the address rules that admission and allocation must
// agree on, as pure functions: which address space an interface's
// addresses are claimed in (SpaceName) and which addresses of a pool are
// never given to a pod (ReservedInPool). The policy judges static
// addresses and quotas with them, the allocator hands out addresses with
// them; neither needs the other's client code.
package rules
