package localcluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/containernetworking/plugins/pkg/ns"
)

// Forward accepts connections on ln (in the caller's netns, normally the
// machine's loopback) and relays each one to target, dialled from inside
// the network namespace at netnsPath. The dialling socket is created in
// that netns and stays there, so no route or address is needed in the
// machine's own netns. It returns when ctx ends or ln fails.
func Forward(ctx context.Context, ln net.Listener, netnsPath, target string) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		go relay(conn, netnsPath, target)
	}
}

// dialIn opens a TCP connection to target from inside the netns. Only the
// socket() and connect() calls run on the namespace-switched thread; the
// returned connection is then used from any goroutine.
func dialIn(netnsPath, target string) (net.Conn, error) {
	var conn net.Conn
	err := ns.WithNetNSPath(netnsPath, func(ns.NetNS) error {
		var err error
		conn, err = net.DialTimeout("tcp", target, 5*time.Second)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s in netns %q: %w", target, netnsPath, err)
	}
	return conn, nil
}

func relay(client net.Conn, netnsPath, target string) {
	defer client.Close()
	server, err := dialIn(netnsPath, target)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer server.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	copyHalf := func(dst, src net.Conn) {
		defer wg.Done()
		if _, err := io.Copy(dst, src); err != nil {
			// A reset or failure on one side ends both directions.
			client.Close()
			server.Close()
			return
		}
		// Pass the half-close on so the other direction can finish.
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}
	go copyHalf(server, client)
	go copyHalf(client, server)
	wg.Wait()
}
