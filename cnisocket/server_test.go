package cnisocket

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// attacherFunc adapts a function to Attacher.
type attacherFunc func(ctx context.Context, req Request) error

func (f attacherFunc) Attach(ctx context.Context, req Request) error { return f(ctx, req) }

func serve(t *testing.T, a Attacher) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run", "cni.sock")
	s := &Server{Path: path, Attacher: a}
	l, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, s, l)
	return path
}

var good = Request{Namespace: "ns", Name: "p", UID: "u", SandboxID: "sb", NetNS: "/var/run/netns/x", IPs: []string{"10.244.0.7", "fd00::7"}}

// TestServerAnswersWithTheAttachersOutcome: root-only modes, the request
// reaches the Attacher whole, its error comes back naming the pod, and a
// malformed request never reaches it.
func TestServerAnswersWithTheAttachersOutcome(t *testing.T) {
	var got []Request
	path := serve(t, attacherFunc(func(_ context.Context, req Request) error {
		got = append(got, req)
		if req.Name == "bad" {
			return errors.New("pod ns/bad: approval refused: bad signature")
		}
		return nil
	}))
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %v (%v), want a socket with mode 0600", st.Mode(), err)
	}
	if st, _ := os.Stat(filepath.Dir(path)); st.Mode().Perm() != 0o700 {
		t.Fatalf("socket folder mode %v, want 0700", st.Mode().Perm())
	}
	ctx := context.Background()
	if err := Call(ctx, path, good); err != nil {
		t.Fatalf("good request: %v", err)
	}
	bad := good
	bad.Name = "bad"
	if err := Call(ctx, path, bad); err == nil || !strings.Contains(err.Error(), "ns/bad: approval refused: bad signature") {
		t.Fatalf("refused request: err = %v", err)
	}
	empty := good
	empty.NetNS = ""
	if err := Call(ctx, path, empty); err == nil || !strings.Contains(err.Error(), "netns: must not be empty") {
		t.Fatalf("request without netns: err = %v", err)
	}
	wrongIP := good
	wrongIP.IPs = []string{"10.244.0.7/24"}
	if err := Call(ctx, path, wrongIP); err == nil || !strings.Contains(err.Error(), `ips[0] "10.244.0.7/24": not an IP address`) {
		t.Fatalf("request with a prefix for an address: err = %v", err)
	}
	many := good
	many.IPs = slices.Repeat([]string{"10.0.0.1"}, maxIPs+1)
	if err := Call(ctx, path, many); err == nil || !strings.Contains(err.Error(), "ips: 9 addresses, at most 8") {
		t.Fatalf("request with too many addresses: err = %v", err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], good) {
		t.Fatalf("attacher saw %+v, want the good and the refused request only", got)
	}
}

// TestServerStopsWaitingWhenThePluginGoesAway: the Attacher's context ends
// once the plugin's own timeout closed the connection.
func TestServerStopsWaitingWhenThePluginGoesAway(t *testing.T) {
	ended := make(chan error, 1)
	path := serve(t, attacherFunc(func(ctx context.Context, _ Request) error {
		<-ctx.Done()
		ended <- ctx.Err()
		return ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := Call(ctx, path, good); err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("call past its deadline: err = %v, want no answer", err)
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("attacher's context ended with %v, want canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the attacher still waits after the plugin went away")
	}
}
