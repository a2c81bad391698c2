package portsecurity

import (
	"sync"

	"github.com/google/nftables"
)

// Conn is a lasting connection to the table in one netns, for a caller
// that writes ports' rules often, such as the node agent on every attach.
// It keeps two things across calls:
//
//   - its socket: the kernel frees what a transaction replaced after an RCU
//     grace period, and closing an nftables socket waits for that work
//     (measured about 10 ms per close on a 2-CPU node, where the write took
//     under 1 ms);
//   - the table's state, read once: Ensure and Remove then write only the
//     elements that differ, with no read of the table, so their cost does
//     not grow with the ports on the node.
//
// The state is the Conn's belief: Ports reads the table again (the agent's
// periodic collection calls it, so a change made beside the agent is seen
// there and put right by the next write of that port). Calls are
// serialised and each is a transaction of its own. After a failed call the
// socket is closed and the state forgotten, so the next call starts from
// what the kernel holds.
type Conn struct {
	table Table
	mu    sync.Mutex
	c     *nftables.Conn
	st    *state
}

// Lasting returns a Conn to t's netns; it opens its socket on first use.
func (t Table) Lasting() *Conn {
	return &Conn{table: t}
}

// Ensure is Table.Ensure on the lasting connection.
func (c *Conn) Ensure(pl Plan) (changed bool, err error) {
	err = c.do(false, func(nc *nftables.Conn, st *state) error {
		changed, err = st.ensure(nc, pl)
		return err
	})
	return changed, err
}

// Remove is Table.Remove on the lasting connection.
func (c *Conn) Remove(ports ...string) error {
	if len(ports) == 0 {
		return nil
	}
	return c.do(false, func(nc *nftables.Conn, st *state) error { return st.remove(nc, ports) })
}

// Ports is Table.Ports on the lasting connection: it reads the table
// again.
func (c *Conn) Ports() (ports []string, err error) {
	err = c.do(true, func(_ *nftables.Conn, st *state) error {
		ports = st.portNames()
		return nil
	})
	return ports, err
}

// Delete is Table.Delete on the lasting connection.
func (c *Conn) Delete() error {
	return c.do(true, func(nc *nftables.Conn, st *state) error { return st.delete(nc) })
}

// Close closes the socket, if open, and forgets the state. The Conn may be
// used again: it then opens a new socket and reads the table.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

// do runs f with the socket and the state, read first when reread or not
// known.
func (c *Conn) do(reread bool, f func(*nftables.Conn, *state) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		nc, err := c.table.conn()
		if err != nil {
			return err
		}
		c.c = nc
	}
	var err error
	if c.st == nil || reread {
		c.st, err = readState(c.c)
	}
	if err == nil {
		err = f(c.c, c.st)
	}
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
	c.st = nil
}
