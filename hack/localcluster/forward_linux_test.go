package localcluster

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/containernetworking/plugins/pkg/ns"
)

// TestRootForward relays a connection from the test's netns into a
// throwaway netns where an echo server listens on that netns's loopback,
// unreachable from outside it without the forwarder.
func TestRootForward(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("needs root: creates a network namespace")
	}
	name := "pntest-" + strings.ToLower(rand.Text()[:8])
	if err := ensureNetNS(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteNetNS(name); err != nil {
			t.Error(err)
		}
	})
	h, err := handleAt(name)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := ensureUp(h, "lo", name); err != nil {
		t.Fatal(err)
	}
	var echo net.Listener
	if err := ns.WithNetNSPath(netnsPath(name), func(ns.NetNS) error {
		var err error
		echo, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "echo %s", line)
			}()
		}
	}()
	// The echo address is loopback in the other netns: dialling it here
	// must not reach the echo server.
	if c, err := net.Dial("tcp", echo.Addr().String()); err == nil {
		c.Close()
		t.Fatalf("%s reachable from the test's netns; the test would prove nothing", echo.Addr())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Forward(ctx, ln, netnsPath(name), echo.Addr().String()) }()
	for i := range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "hello %d\n", i)
		got, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if want := fmt.Sprintf("echo hello %d\n", i); err != nil || got != want {
			t.Errorf("reply %q, %v; want %q", got, err, want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Forward returned %v after cancel, want nil", err)
	}
}
