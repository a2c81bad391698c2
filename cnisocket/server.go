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

// DefaultMaxConns bounds the requests served at once: far above the
// sandboxes one node sets up at the same time, far below what would
// exhaust the agent.
const DefaultMaxConns = 128

// DefaultReadTimeout bounds the wait for a request once a peer connected:
// the plugin writes its request at once.
const DefaultReadTimeout = 10 * time.Second

// Server serves the plugin's requests on a unix socket.
type Server struct {
	// Path of the socket; its folder is created 0700 and the socket is
	// made 0600, so only root on the node reaches it.
	Path     string
	Attacher Attacher
	// MaxWait bounds each request; zero means DefaultMaxWait.
	MaxWait time.Duration
	// MaxConns bounds the requests served at once; a connection beyond
	// it is answered at once that the agent is busy. Zero means
	// DefaultMaxConns.
	MaxConns int
	// ReadTimeout bounds the wait for the request of a connection; zero
	// means DefaultReadTimeout.
	ReadTimeout time.Duration
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
// for the requests in flight (whose contexts end with ctx). Only a peer
// running as root (or as the agent's own user) is served, and at most
// MaxConns at once; the others are answered why not, at once.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	defer s.wg.Wait()
	maxConns := s.MaxConns
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	slots := make(chan struct{}, maxConns)
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cni socket %q: accept: %w", s.Path, err)
		}
		if err := s.admitPeer(conn); err != nil {
			s.refuse(conn, err)
			continue
		}
		select {
		case slots <- struct{}{}:
		default:
			s.refuse(conn, fmt.Errorf("cni socket %q: busy: %d requests in flight, at most %d", s.Path, maxConns, maxConns))
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-slots }()
			s.handle(ctx, conn)
		}()
	}
}

// admitPeer lets through root, which the runtime runs CNI plugins as, and
// the agent's own user (who could do what the agent does anyway).
func (s *Server) admitPeer(conn net.Conn) error {
	uid, err := peerUID(conn)
	if err != nil {
		return fmt.Errorf("cni socket %q: peer credentials: %w", s.Path, err)
	}
	if uid != 0 && uid != uint32(os.Geteuid()) {
		return fmt.Errorf("cni socket %q: peer uid %d: only root (uid 0) may ask", s.Path, uid)
	}
	return nil
}

// refuse answers a connection that is not served with the reason, and
// closes it. The answer is small: it fits the socket's buffer, so a peer
// that does not read cannot hold the accept loop.
func (s *Server) refuse(conn net.Conn, err error) {
	defer conn.Close()
	s.failed(err)
	if dlErr := conn.SetWriteDeadline(time.Now().Add(time.Second)); dlErr == nil {
		_ = json.NewEncoder(conn).Encode(Response{Error: err.Error()}) // best effort: the peer is refused either way
	}
}

// readRequest reads one request of at most maxRequestBytes within
// ReadTimeout.
func (s *Server) readRequest(conn net.Conn) (Request, error) {
	timeout := s.ReadTimeout
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	var req Request
	if err := conn.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return req, err
	}
	lr := &io.LimitedReader{R: conn, N: maxRequestBytes + 1}
	err := json.NewDecoder(lr).Decode(&req)
	switch {
	case lr.N <= 0:
		return req, fmt.Errorf("request: more than %d bytes", maxRequestBytes)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return req, fmt.Errorf("request: none within %s", timeout)
	case err != nil:
		return req, fmt.Errorf("request: %w", err)
	}
	return req, conn.SetReadDeadline(time.Time{})
}

// handle reads one request, waits for the Attacher and writes its answer.
func (s *Server) handle(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	req, err := s.readRequest(conn)
	if err != nil {
		err = fmt.Errorf("cni socket %q: %w", s.Path, err)
		s.failed(err)
		_ = json.NewEncoder(conn).Encode(Response{Error: err.Error()}) // best effort: the request failed either way
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
	err = req.Validate()
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
