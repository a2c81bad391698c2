// Package nldump reads netlink tables whole.
//
// The kernel marks a dump it had to restart because the table changed while
// it was being read, and the netlink library then returns what it read
// together with ErrDumpInterrupted: the entries may be incomplete. A busy
// node (pods starting, links coming and going) interrupts dumps often, so
// every reader that decides from a dump retries it here instead of trusting
// or failing on a partial one.
package nldump
