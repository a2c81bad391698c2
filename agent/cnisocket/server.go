package cnisocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Attacher attaches a pod's networks inside a sandbox being set up. It
// returns once they are ready (nil) or cannot be (the reason); it must
// return when ctx ends.
type Attacher interface {
	Attach(ctx context.Context, req Request) error
}

// DefaultMaxWait bounds one request on the server side, above the plugin's
// own default timeout, so a plugin that hangs without closing its end
// does not hold a request forever.
const DefaultMaxWait = 3 * time.Minute

// Server serves the plugin's requests on a unix socket.
type Server struct {
	// Path of the socket; its folder is created 0700 and the socket is
	// made 0600, so only root on the node reaches it.
	Path     string
	Attacher Attacher
	// MaxWait bounds each request; zero means DefaultMaxWait.
	MaxWait time.Duration
	// Failed, when set, is told of requests that could not be read or
	// answered (the plugin went away, a malformed request).
	Failed func(error)

	wg sync.WaitGroup
}

// Listen creates the socket, replacing a stale one a previous agent left.
func (s *Server) Listen() (net.Listener, error) {
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cni socket folder %q: %w", dir, err)
	}
	// MkdirAll keeps the mode of a folder that exists.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cni socket folder %q: %w", dir, err)
	}
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale cni socket %q: %w", s.Path, err)
	}
	l, err := net.Listen("unix", s.Path)
	if err != nil {
		return nil, fmt.Errorf("cni socket %q: %w", s.Path, err)
	}
	if err := os.Chmod(s.Path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("cni socket %q: %w", s.Path, err)
	}
	return l, nil
}

// Start listens and serves until ctx ends (manager.Runnable).
func (s *Server) Start(ctx context.Context) error {
	l, err := s.Listen()
	if err != nil {
		return err
	}
	return s.Serve(ctx, l)
}

// Serve answers the requests on l until ctx ends, then closes l and waits
// for the requests in flight (whose contexts end with ctx).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	defer s.wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cni socket %q: accept: %w", s.Path, err)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, conn)
		}()
	}
}

// handle reads one request, waits for the Attacher and writes its answer.
func (s *Server) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	var req Request
	if err := json.NewDecoder(io.LimitReader(conn, maxRequestBytes)).Decode(&req); err != nil {
		s.failed(fmt.Errorf("cni socket %q: read request: %w", s.Path, err))
		return
	}
	wait := s.MaxWait
	if wait <= 0 {
		wait = DefaultMaxWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// The plugin sends nothing after its request: a read that returns
	// means it closed its end (its own timeout, the runtime gave up), and
	// nobody is left to wait for.
	go func() {
		var b [1]byte
		conn.Read(b[:])
		cancel()
	}()
	err := req.Validate()
	if err == nil {
		err = s.Attacher.Attach(ctx, req)
	}
	var resp Response
	if err != nil {
		resp.Error = err.Error()
	}
	if err := json.NewEncoder(conn).Encode(resp); err != nil {
		s.failed(fmt.Errorf("cni socket %q: answer pod %s/%s: %w", s.Path, req.Namespace, req.Name, err))
	}
}

func (s *Server) failed(err error) {
	if s.Failed != nil {
		s.Failed(err)
	}
}
