package simnode

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Counter counts the API requests that go through a transport, by kind.
// Watch streams are counted when opened, not per event.
type Counter struct {
	gets, lists, watches, writes, discovery atomic.Int64

	mu sync.Mutex
	// log holds "METHOD path" of the last requests, for failure messages.
	log []string
}

// logSize bounds Counter's log.
const logSize = 64

// Recent returns the method and path of the last requests.
func (c *Counter) Recent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// Counts is a snapshot of a Counter.
type Counts struct {
	// Gets read one object, Lists a collection; Reads is their sum.
	Gets, Lists int64
	// Watches opened.
	Watches int64
	// Writes: create, update, patch, delete.
	Writes int64
	// Discovery reads (/api, /apis, a group version's resource list): a
	// client does them once per group version it meets, not per object.
	Discovery int64
}

// Reads is Gets plus Lists.
func (c Counts) Reads() int64 { return c.Gets + c.Lists }

// Total is every request but discovery.
func (c Counts) Total() int64 { return c.Gets + c.Lists + c.Watches + c.Writes }

// Sub is c minus an earlier snapshot.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Gets: c.Gets - o.Gets, Lists: c.Lists - o.Lists, Watches: c.Watches - o.Watches,
		Writes: c.Writes - o.Writes, Discovery: c.Discovery - o.Discovery}
}

// Snapshot returns the counts so far.
func (c *Counter) Snapshot() Counts {
	return Counts{Gets: c.gets.Load(), Lists: c.lists.Load(), Watches: c.watches.Load(),
		Writes: c.writes.Load(), Discovery: c.discovery.Load()}
}

// Wrap is a rest.Config WrapTransport.
func (c *Counter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{c: c, next: rt}
}

type countingTransport struct {
	c    *Counter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.c.count(req)
	return t.next.RoundTrip(req)
}

// count classifies one request. A GET of a collection has no name after
// the resource: /api/v1/namespaces/x/pods, /apis/g/v/ipclaims; a GET of an
// object has one more segment.
func (c *Counter) count(req *http.Request) {
	c.mu.Lock()
	c.log = append(c.log, req.Method+" "+req.URL.Path)
	if len(c.log) > logSize {
		c.log = c.log[len(c.log)-logSize:]
	}
	c.mu.Unlock()
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			c.watches.Add(1)
		case isDiscovery(req.URL.Path):
			c.discovery.Add(1)
		case isCollection(req.URL.Path):
			c.lists.Add(1)
		default:
			c.gets.Add(1)
		}
	default:
		c.writes.Add(1)
	}
}

// isCollection reports whether path names a collection of resources.
func isCollection(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// Drop the group/version prefix: api/v1 or apis/<group>/<version>.
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return false
	}
	if len(parts) >= 2 && parts[0] == "namespaces" {
		if len(parts) == 2 {
			return false // a Namespace object
		}
		parts = parts[2:]
	}
	return len(parts) == 1
}

// isDiscovery reports whether path is a discovery document: /api, /apis,
// /api/v1, /apis/<group>, /apis/<group>/<version>.
func isDiscovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case parts[0] == "api":
		return len(parts) <= 2
	case parts[0] == "apis":
		return len(parts) <= 3
	}
	return false
}
