package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"podnet.io/podnet/hack/localcluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

const usage = "usage: localcluster up|down|kubeconfig|import|forward [flags]"

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if args[0] == "forward" {
		return forward(ctx, args[1:])
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	name := fs.String("name", "podnet", "cluster name (part of every netns, interface and folder it owns)")
	root := fs.String("root", ".", "podnet repository root")
	nodes := fs.Int("nodes", 1, "up: number of nodes: 1, or 2 for a second node in its own netns")
	attach := fs.Bool("attach-at-sandbox-setup", false, "up: chain podnet's CNI plugin after each node's bridge (from a CNI bin folder of the cluster's own)")
	runtime := fs.String("runtime", "", "up: container runtime of the nodes: "+localcluster.RuntimeNames)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	r, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	switch args[0] {
	case "up":
		c, err := localcluster.Up(ctx, localcluster.Options{Name: *name, Nodes: *nodes, Root: r, Log: os.Stderr, AttachAtSandboxSetup: *attach, Runtime: *runtime})
		if err != nil {
			return err
		}
		fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig)
		return nil
	case "down":
		return localcluster.Down(ctx, *name, r)
	case "kubeconfig", "import":
		c, err := localcluster.Load(*name, r)
		if err != nil {
			return err
		}
		if args[0] == "kubeconfig" {
			fmt.Println(c.Kubeconfig)
			return nil
		}
		for _, t := range fs.Args() {
			if err := c.ImportImage(ctx, t); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown command %q; %s", args[0], usage)
}

// forward runs the API forwarder until it is signalled. It writes the
// address it listens on to --addr-file (through a rename, so a reader
// never sees half an address).
func forward(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("forward", flag.ContinueOnError)
	netns := fs.String("netns", "", "path of the network namespace to dial from")
	target := fs.String("target", "", "host:port to dial inside the netns")
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on in this process's netns")
	addrFile := fs.String("addr-file", "", "file to write the listening address to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *netns == "" || *target == "" || *addrFile == "" {
		return errors.New("forward: --netns, --target and --addr-file are required")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("forward: listen on %s: %w", *listen, err)
	}
	tmp := *addrFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(ln.Addr().String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := os.Rename(tmp, *addrFile); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	return localcluster.Forward(ctx, ln, *netns, *target)
}
