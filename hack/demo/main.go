// Command demo runs `make demo`, `make demo-span` and their `-down`: a
// local cluster, built and imported images, cert-manager and podnet
// installed from deploy/, a sample NetworkProfile and Deployment from
// deploy/samples, then each pod's interfaces, a ping between two pods over
// the secondary network, and what `kubectl podnet` says about them. With
// --span the cluster has two nodes and the two pods, one on each node,
// ping each other over a VXLAN network. Every stage prints its progress.
//
//	demo up [--name demo] [--span]
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
	"podnet.io/podnet/hack/progress"
	"podnet.io/podnet/kubectlpodnet"
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
	span := fs.Bool("span", false, "two nodes, one pod on each, over the VXLAN sample network")
	runtime := fs.String("runtime", "", "container runtime of the nodes: "+localcluster.RuntimeNames)
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
	v := nodeLocal
	if *span {
		v = acrossNodes
	}
	return up(ctx, root, *name, *runtime, v)
}

// variant is what a demo shows: the samples it applies and the namespace
// and Deployment (of the same name) they create.
type variant struct {
	nodes   int
	samples []string
	name    string // namespace, Deployment and app label
	network string // what net1 is, for the ping's title
}

var (
	nodeLocal   = variant{1, []string{"networkprofile-demo.yaml", "demo.yaml"}, "demo", "the data network"}
	acrossNodes = variant{2, []string{"networkprofile-span.yaml", "demo-span.yaml"}, "demo-span", "the VXLAN network, across nodes"}
)

func up(ctx context.Context, root, name, runtime string, v variant) error {
	start := time.Now()
	var c *localcluster.Cluster
	err := progress.Stage(os.Stderr, fmt.Sprintf("demo: starting local cluster %q of %d node(s) (etcd, kube-apiserver, controller-manager, scheduler, containerd, kubelet, kube-proxy)", name, v.nodes), "usually under 1 min", func() (err error) {
		c, err = localcluster.Up(ctx, localcluster.Options{Name: name, Nodes: v.nodes, Root: root, Log: os.Stderr, Runtime: runtime})
		return err
	})
	if err != nil {
		return err
	}
	// The agents serve the DRA kubelet plugin too, so that a claim's
	// network can be tried on the demo (docs/dra.md).
	in := &install.Installer{Root: root, Cluster: c, Log: os.Stderr,
		DeployEnv: []string{"NODE_KUBELET_DIR=" + localcluster.NodeKubeletDir}}
	if err := in.All(ctx); err != nil {
		return err
	}
	if err := applySamples(ctx, root, in, v); err != nil {
		return err
	}
	pods, err := demoPods(ctx, in, v.name)
	if err != nil {
		return err
	}
	for _, p := range pods {
		out, err := in.KubectlOutput(ctx, "-n", v.name, "exec", p.name, "-c", "app", "--", "ip", "addr", "show")
		if err != nil {
			return err
		}
		fmt.Printf("\n=== pod %s/%s on node %s: interfaces\n%s", v.name, p.name, p.node, out)
	}
	if len(pods) < 2 {
		return fmt.Errorf("want 2 demo pods, have %d", len(pods))
	}
	a, b := pods[0], pods[1]
	for _, ip := range b.ips {
		fmt.Printf("\n=== ping from %s (node %s) to %s (node %s) at %s (net1, %s)\n", a.name, a.node, b.name, b.node, ip, v.network)
		out, err := in.KubectlOutput(ctx, "-n", v.name, "exec", a.name, "-c", "app", "--", "ping", "-c", "3", "-W", "2", ip)
		fmt.Print(out)
		if err != nil {
			return err
		}
	}
	showPlugin(ctx, c.Kubeconfig, v.name, a.name)
	fmt.Printf("\ndemo ready in %s. KUBECONFIG=%s\nTear it down with: go run ./hack/demo down --name %s\n", progress.Elapsed(start), c.Kubeconfig, name)
	fmt.Printf("podnet is installed with make deploy; to move it to Helm (docs/install.md): make undeploy, then\n"+
		"  make helm-install HELM_VALUES=%s HELM_ARGS=\"--take-ownership --set-file approvalKeys.privateKey=_output/keys/approval.key --set-file approvalKeys.publicKey=_output/keys/approval.pub\"\n",
		filepath.Join(c.Dir, localcluster.HelmValuesFile))
	return nil
}

// applySamples applies the sample profile and Deployment and waits for
// the Deployment, whose pods are Ready only once podnet attached net1.
func applySamples(ctx context.Context, root string, in *install.Installer, v variant) error {
	samples := filepath.Join(root, "deploy", "samples")
	err := progress.Stage(os.Stderr, "demo: applying the sample NetworkProfile and Deployment", "", func() error {
		for _, f := range v.samples {
			if err := in.KubectlRun(ctx, "apply", "-f", filepath.Join(samples, f)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return progress.Stage(os.Stderr, fmt.Sprintf("demo: waiting for Deployment %[1]s/%[1]s (Ready once podnet attached net1)", v.name), "about 30 s", func() error {
		return in.KubectlRun(ctx, "-n", v.name, "rollout", "status", "deployment/"+v.name, "--timeout=180s")
	})
}

// showPlugin prints what `kubectl podnet` says about the demo, run
// in-process exactly as the kubectl-podnet binary runs it.
func showPlugin(ctx context.Context, kubeconfig, namespace, pod string) {
	for _, args := range [][]string{
		{"networks", "-n", namespace},
		{"pools"},
		{"explain", "-n", namespace, pod},
	} {
		fmt.Printf("\n=== kubectl podnet %s\n", strings.Join(args, " "))
		kubectlpodnet.Main(ctx, append([]string{"--kubeconfig", kubeconfig}, args...), os.Stdout, os.Stderr)
	}
}

type demoPod struct {
	name string
	node string
	ips  []string // addresses of net1, without prefix length
}

// demoPods lists the demo pods with their secondary addresses, read from
// the agent's network-status annotation.
func demoPods(ctx context.Context, in *install.Installer, app string) ([]demoPod, error) {
	out, err := in.KubectlOutput(ctx, "-n", app, "get", "pods", "-l", "app="+app, "-o", "json")
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
			Spec struct {
				NodeName string `json:"nodeName"`
			} `json:"spec"`
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
			return nil, fmt.Errorf("pod %s/%s: decode %s %q: %w", app, it.Metadata.Name, podnetv1.NetworkStatusAnnotation, raw, err)
		}
		p := demoPod{name: it.Metadata.Name, node: it.Spec.NodeName}
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
