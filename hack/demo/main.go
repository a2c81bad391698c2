// Command demo runs `make demo` and `make demo-down`: a local cluster, built
// and imported images, cert-manager and podnet installed from deploy/, the
// sample NetworkProfile and Deployment from deploy/samples, then each pod's
// interfaces and a ping between two pods over the secondary network.
//
//	demo up [--name demo]
//	demo down [--name demo]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/install"
	"podnet.io/podnet/hack/localcluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || (args[0] != "up" && args[0] != "down") {
		return errors.New("usage: demo up|down [--name demo]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	name := fs.String("name", "demo", "local cluster name")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if args[0] == "down" {
		return localcluster.Down(ctx, *name, root)
	}
	return up(ctx, root, *name)
}

func up(ctx context.Context, root, name string) error {
	start := time.Now()
	c, err := localcluster.Up(ctx, localcluster.Options{Name: name, Nodes: 1, Root: root, Log: os.Stderr})
	if err != nil {
		return err
	}
	in := &install.Installer{Root: root, Cluster: c, Log: os.Stderr}
	if err := in.All(ctx); err != nil {
		return err
	}
	samples := filepath.Join(root, "deploy", "samples")
	for _, s := range [][]string{
		{"apply", "-f", filepath.Join(samples, "networkprofile-demo.yaml")},
		{"apply", "-f", filepath.Join(samples, "demo.yaml")},
		{"-n", "demo", "rollout", "status", "deployment/demo", "--timeout=180s"},
	} {
		if err := in.KubectlRun(ctx, s...); err != nil {
			return err
		}
	}
	pods, err := demoPods(ctx, in)
	if err != nil {
		return err
	}
	for _, p := range pods {
		out, err := in.KubectlOutput(ctx, "-n", "demo", "exec", p.name, "-c", "app", "--", "ip", "addr", "show")
		if err != nil {
			return err
		}
		fmt.Printf("\n=== pod demo/%s: interfaces\n%s", p.name, out)
	}
	if len(pods) < 2 {
		return fmt.Errorf("want 2 demo pods, have %d", len(pods))
	}
	a, b := pods[0], pods[1]
	for _, ip := range b.ips {
		fmt.Printf("\n=== ping from %s to %s at %s (net1, the data network)\n", a.name, b.name, ip)
		out, err := in.KubectlOutput(ctx, "-n", "demo", "exec", a.name, "-c", "app", "--", "ping", "-c", "3", "-W", "2", ip)
		fmt.Print(out)
		if err != nil {
			return err
		}
	}
	fmt.Printf("\ndemo ready in %s. KUBECONFIG=%s\nTear it down with: make demo-down\n", time.Since(start).Round(time.Second), c.Kubeconfig)
	return nil
}

type demoPod struct {
	name string
	ips  []string // addresses of net1, without prefix length
}

// demoPods lists the demo pods with their secondary addresses, read from
// the agent's network-status annotation.
func demoPods(ctx context.Context, in *install.Installer) ([]demoPod, error) {
	out, err := in.KubectlOutput(ctx, "-n", "demo", "get", "pods", "-l", "app=demo", "-o", "json")
	if err != nil {
		return nil, err
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name              string            `json:"name"`
				Annotations       map[string]string `json:"annotations"`
				DeletionTimestamp *string           `json:"deletionTimestamp"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		return nil, fmt.Errorf("decode demo pods: %w", err)
	}
	var pods []demoPod
	for _, it := range list.Items {
		if it.Metadata.DeletionTimestamp != nil {
			continue
		}
		var status []struct {
			Interface string   `json:"interface"`
			IPs       []string `json:"ips"`
		}
		raw := it.Metadata.Annotations[podnetv1.NetworkStatusAnnotation]
		if err := json.Unmarshal([]byte(raw), &status); err != nil {
			return nil, fmt.Errorf("pod demo/%s: decode %s %q: %w", it.Metadata.Name, podnetv1.NetworkStatusAnnotation, raw, err)
		}
		p := demoPod{name: it.Metadata.Name}
		for _, s := range status {
			if s.Interface != "net1" {
				continue
			}
			for _, ip := range s.IPs {
				addr, _, _ := strings.Cut(ip, "/")
				p.ips = append(p.ips, addr)
			}
		}
		pods = append(pods, p)
	}
	return pods, nil
}
