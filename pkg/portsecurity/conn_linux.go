package portsecurity

import (
	"sync"

	"github.com/google/nftables"
)

// Conn is a lasting connection to the table in one netns, for a caller
// that writes ports' rules often, such as the node agent on every attach.
// The kernel frees what a transaction replaced (a flushed rule, a deleted
// chain or set) after an RCU grace period, and closing an nftables socket
// waits for that work to finish (nf_tables flushes it when the socket is
// released): measured about 10 ms per close on a 2-CPU node, where the
// write itself took under 1 ms. A Conn keeps its socket across calls and
// so never waits for it on the write path. Its calls are serialised and
// each is a transaction of its own, as with Table. After a failed call
// the socket is closed and the next call opens a new one, so a socket left
// with unread answers is never used again.
type Conn struct {
	table Table
	mu    sync.Mutex
	c     *nftables.Conn
}

// Lasting returns a Conn to t's netns; it opens its socket on first use.
func (t Table) Lasting() *Conn {
	return &Conn{table: t}
}

// Ensure is Table.Ensure on the lasting connection.
func (c *Conn) Ensure(pl Plan) (changed bool, err error) {
	err = c.do(func(nc *nftables.Conn) error {
		changed, err = ensure(nc, pl)
		return err
	})
	return changed, err
}

// Remove is Table.Remove on the lasting connection.
func (c *Conn) Remove(ports ...string) error {
	if len(ports) == 0 {
		return nil
	}
	return c.do(func(nc *nftables.Conn) error { return remove(nc, ports) })
}

// Ports is Table.Ports on the lasting connection.
func (c *Conn) Ports() (ports []string, err error) {
	err = c.do(func(nc *nftables.Conn) error {
		ports, err = portChains(nc)
		return err
	})
	return ports, err
}

// Delete is Table.Delete on the lasting connection.
func (c *Conn) Delete() error {
	return c.do(deleteTable)
}

// Close closes the socket, if open. The Conn may be used again: it then
// opens a new one.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

func (c *Conn) do(f func(*nftables.Conn) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		nc, err := c.table.conn()
		if err != nil {
			return err
		}
		c.c = nc
	}
	err := f(c.c)
	if err != nil {
		c.drop()
	}
	return err
}

func (c *Conn) drop() {
	if c.c != nil {
		_ = c.c.CloseLasting() // closing a socket we give up on; nothing to do on failure
		c.c = nil
	}
}
