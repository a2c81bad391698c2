package cnisocket

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// dialEnv makes the test binary, started as a child, dial the socket it
// names with the good request and print the error, instead of testing.
const dialEnv = "PODNET_CNISOCKET_TEST_DIAL"

func TestMain(m *testing.M) {
	if sock := os.Getenv(dialEnv); sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := Call(ctx, sock, good); err != nil {
			os.Stdout.WriteString(err.Error())
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestValidate: each field a request needs, and its limit, named.
func TestValidate(t *testing.T) {
	long := func(n int) string { return strings.Repeat("a", n) }
	for name, c := range map[string]struct {
		edit func(*Request)
		want string
	}{
		"good":             {func(*Request) {}, ""},
		"no namespace":     {func(r *Request) { r.Namespace = "" }, "namespace: must not be empty"},
		"no name":          {func(r *Request) { r.Name = "" }, "name: must not be empty"},
		"no uid":           {func(r *Request) { r.UID = "" }, "uid: must not be empty"},
		"no sandbox":       {func(r *Request) { r.SandboxID = "" }, "sandboxID: must not be empty"},
		"no netns":         {func(r *Request) { r.NetNS = "" }, "netns: must not be empty"},
		"long namespace":   {func(r *Request) { r.Namespace = long(64) }, "namespace: 64 bytes, at most 63"},
		"long name":        {func(r *Request) { r.Name = long(254) }, "name: 254 bytes, at most 253"},
		"long uid":         {func(r *Request) { r.UID = long(129) }, "uid: 129 bytes, at most 128"},
		"long sandbox":     {func(r *Request) { r.SandboxID = long(129) }, "sandboxID: 129 bytes, at most 128"},
		"long netns":       {func(r *Request) { r.NetNS = "/" + long(1024) }, "netns: 1025 bytes, at most 1024"},
		"relative netns":   {func(r *Request) { r.NetNS = "proc/1/ns/net" }, `netns "proc/1/ns/net": must be an absolute, clean path`},
		"netns with ..":    {func(r *Request) { r.NetNS = "/var/run/netns/../../proc/1/ns/net" }, "must be an absolute, clean path"},
		"netns with slash": {func(r *Request) { r.NetNS = "/var/run/netns/x/" }, "must be an absolute, clean path"},
	} {
		r := good
		c.edit(&r)
		err := r.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

// rawCall writes data on a new connection to path and returns the
// answer's error.
func rawCall(t *testing.T, path string, data []byte) string {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		t.Fatalf("no answer: %v", err)
	}
	return resp.Error
}

// TestServerBoundsEachRequest: a request larger than the limit, or one
// that does not come, is answered naming the limit, and never reaches the
// Attacher.
func TestServerBoundsEachRequest(t *testing.T) {
	reached := make(chan Request, 2)
	path := filepath.Join(t.TempDir(), "cni.sock")
	s := &Server{Path: path, ReadTimeout: 200 * time.Millisecond, Attacher: attacherFunc(func(_ context.Context, req Request) error {
		reached <- req
		return nil
	})}
	serveWith(t, s)
	big := `{"namespace":"` + strings.Repeat("a", maxRequestBytes) + `"}`
	if got := rawCall(t, path, []byte(big)); !strings.Contains(got, "request: more than 16384 bytes") {
		t.Errorf("oversized request: %q", got)
	}
	if got := rawCall(t, path, nil); !strings.Contains(got, "request: none within 200ms") {
		t.Errorf("silent peer: %q", got)
	}
	if len(reached) != 0 {
		t.Fatalf("the attacher saw %+v", <-reached)
	}
}

// TestServerBoundsConnections: beyond MaxConns requests in flight, a new
// connection is answered at once that the agent is busy; once a request
// ends, the next is served again.
func TestServerBoundsConnections(t *testing.T) {
	release := make(chan struct{})
	inFlight := make(chan struct{}, 8)
	path := filepath.Join(t.TempDir(), "cni.sock")
	s := &Server{Path: path, MaxConns: 2, Attacher: attacherFunc(func(ctx context.Context, _ Request) error {
		inFlight <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	})}
	serveWith(t, s)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if err := Call(ctx, path, good); err != nil {
				t.Errorf("a request within the bound: %v", err)
			}
		})
	}
	<-inFlight
	<-inFlight
	for range 20 {
		if err := Call(ctx, path, good); err == nil || !strings.Contains(err.Error(), "busy: 2 requests in flight, at most 2") {
			t.Fatalf("a request beyond the bound: err = %v, want busy", err)
		}
	}
	close(release)
	wg.Wait()
	if err := Call(ctx, path, good); err != nil {
		t.Fatalf("after the flood: %v", err)
	}
}

// TestRootServerServesOnlyRoot: a process of another user that reaches
// the socket (here, one made reachable on purpose) is refused by its
// kernel-reported uid before its request is read; root is served.
func TestRootServerServesOnlyRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatalf("%s starts a process as nobody: run it as root", t.Name())
	}
	// A folder and a copy of this test binary that nobody may use.
	dir, err := os.MkdirTemp("", "podnet-cnisocket-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cnisocket.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cni.sock")
	var reached []Request
	var mu sync.Mutex
	s := &Server{Path: path, Attacher: attacherFunc(func(_ context.Context, req Request) error {
		mu.Lock()
		defer mu.Unlock()
		reached = append(reached, req)
		return nil
	})}
	serveWith(t, s)
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	dial := func(cred *syscall.Credential) string {
		t.Helper()
		cmd := exec.Command(bin)
		cmd.Env = []string{dialEnv + "=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v: %s", err, out)
		}
		return string(out)
	}
	if got := dial(&syscall.Credential{Uid: 65534, Gid: 65534}); !strings.Contains(got, "peer uid 65534: only root (uid 0) may ask") {
		t.Fatalf("as nobody: %q, want refused naming its uid", got)
	}
	mu.Lock()
	n := len(reached)
	mu.Unlock()
	if n != 0 {
		t.Fatalf("a request of nobody reached the attacher")
	}
	if got := dial(nil); got != "" {
		t.Fatalf("as root: %q, want served", got)
	}
}

// serveWith serves s on its own listener until the test ends.
func serveWith(t *testing.T, s *Server) {
	t.Helper()
	l, err := net.Listen("unix", s.Path)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, s, l)
}

// serveOn serves s on l until the test ends.
func serveOn(t *testing.T, s *Server, l net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
}
