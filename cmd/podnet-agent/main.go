// Command podnet-agent is podnet's node agent. It runs on every node (a
// DaemonSet with NET_ADMIN, NET_RAW and SYS_ADMIN), watches the pods of its node, and
// builds the secondary networks their verified approvals list. It holds only
// the webhook's public key, so it can execute approvals but never mint one.
//
// `podnet-agent wait --interfaces net1,net2 --timeout 5m` returns once
// those interfaces are up in its network namespace. It is the same code as
// the small podnet-wait command, which is what the webhook injects as the
// pod's init container.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"podnet.io/podnet/agent"
	agentdra "podnet.io/podnet/agent/dra"
	"podnet.io/podnet/agent/nodecarry"
	"podnet.io/podnet/agent/nodehold"
	agentnri "podnet.io/podnet/agent/nri"
	"podnet.io/podnet/agent/sandbox"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/api/wait"
	"podnet.io/podnet/cniplugin"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/hostdev"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/kubeclient"
	"podnet.io/podnet/pkg/nodefile"
	"podnet.io/podnet/pkg/nriprobe"
	"podnet.io/podnet/pkg/version"
	"podnet.io/podnet/podwait"
)

// flags are the agent's command line.
type flags struct {
	nodeName    string
	criEndpoint string
	publicKey   string
	hostNetNS   string
	sysctlNet   string
	resync      time.Duration
	qps         float64
	burst       int
	concurrency int
	sandboxPoll time.Duration
	metricsAddr string
	pprofAddr   string
	probeAddr   string
	// multusStatus and clusterNetwork shape the network-status for the
	// tools of the Multus ecosystem.
	multusStatus   string
	clusterNetwork string
	// cniSocket, when set, serves the chained CNI plugin (attach at
	// sandbox setup).
	cniSocket string
	// nriSocket, when set, registers the agent's NRI plugin with the
	// runtime there; nriCreateWait bounds its CreateContainer wait.
	nriSocket     string
	nriCreateWait time.Duration
	// nriHook, with --nri-socket, is where on the node the agent installs
	// podnet-wait as its NRI plugin's wait hook; nriHookTimeout bounds
	// the hook's wait.
	nriHook        string
	nriHookFrom    string
	nriHookTimeout time.Duration
	// nriRestartUnheld stops, with --nri-socket, the containers the
	// runtime started before their networks (nodehold.UnheldRestarts).
	nriRestartUnheld bool
	// draKubeletDir, when set, serves the DRA kubelet plugin of driver
	// podnet.io to the kubelet whose root directory it is.
	draKubeletDir string
	// daemonSet is the agent's own DaemonSet, namespace/name, watched for
	// the uninstall mark; empty: not watched.
	daemonSet string
}

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("podnet-agent"))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "wait" {
		os.Exit(podwait.Run("podnet-agent wait", os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "install-cni" {
		os.Exit(runInstallCNI(os.Args[2:]))
	}
	var f flags
	flag.StringVar(&f.nodeName, "node-name", os.Getenv("NODE_NAME"), "name of this node (default $NODE_NAME, from the downward API)")
	flag.StringVar(&f.criEndpoint, "cri-endpoint", "unix:///run/containerd/containerd.sock", "CRI runtime socket (containerd: /run/containerd/containerd.sock, CRI-O: /var/run/crio/crio.sock)")
	flag.StringVar(&f.publicKey, "public-key", "/etc/podnet/approval/approval.pub", "the webhook's Ed25519 public key(s), PEM; reloaded when the file changes")
	flag.StringVar(&f.hostNetNS, "host-netns", "", "path of the node's network namespace; empty means the agent's own (hostNetwork: true)")
	flag.StringVar(&f.sysctlNet, "sysctl-net", dataplane.DefaultSysctlNet, "where the node's /proc/sys/net is mounted writable: pod links' accept_ra and accept_redirects are set there from inside the pod's netns")
	flag.DurationVar(&f.resync, "resync", 30*time.Second, "how often every pod is checked again (from the cache and the node: no API request) and leftovers are swept")
	flag.Float64Var(&f.qps, "kube-api-qps", agent.DefaultKubeAPIQPS, "client-side limit of API requests per second")
	flag.IntVar(&f.burst, "kube-api-burst", agent.DefaultKubeAPIBurst, "client-side burst of API requests above --kube-api-qps")
	flag.IntVar(&f.concurrency, "concurrency", agent.DefaultConcurrency, "pods configured at the same time")
	flag.DurationVar(&f.sandboxPoll, "sandbox-poll-interval", sandbox.DefaultPoll, "how often the node's sandboxes are listed (one CRI call for all pods) while a pod waits for its sandbox")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof endpoints; 0 disables them")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.StringVar(&f.multusStatus, "multus-network-status", agent.MultusStatusAuto, "also write the network-status under Multus' key "+v1alpha1.MultusNetworkStatusAnnotation+": auto (only when the API server serves no NetworkAttachmentDefinitions, checked once at start), on or off")
	flag.StringVar(&f.clusterNetwork, "cluster-network-name", v1alpha1.DefaultClusterNetworkName, "name of the network-status entry of the cluster's default network (eth0)")
	flag.StringVar(&f.cniSocket, "cni-socket", "", "unix socket on which the chained CNI plugin podnet-cni asks for a pod's networks during sandbox setup (attach at sandbox setup, e.g. "+cnisocket.DefaultSocket+"); empty: not served")
	flag.StringVar(&f.nriSocket, "nri-socket", "", "the runtime's NRI socket (containerd 2, CRI-O; e.g. /var/run/nri/nri.sock): the agent's NRI plugin starts a podnet pod's attach at RunPodSandbox and refuses its containers until the approved interfaces exist; empty: not registered")
	flag.DurationVar(&f.nriCreateWait, "nri-create-wait", agentnri.DefaultCreateWait, "how long the NRI plugin's CreateContainer awaits a pod's attach before refusing the container (the kubelet retries); below NRI's 2s request timeout")
	flag.StringVar(&f.nriHook, "nri-hook", "", "with --nri-socket: the path on the node (and in the agent, the same) where the agent installs podnet-wait as a wait hook: a container whose pod's networks are still being attached when --nri-create-wait ends is created with it, as an OCI createRuntime hook that waits in the pod's netns, instead of being refused and retried by the kubelet; empty: refused")
	flag.StringVar(&f.nriHookFrom, "nri-hook-from", wait.Binary, "the podnet-wait that --nri-hook installs: the agent image's")
	flag.DurationVar(&f.nriHookTimeout, "nri-hook-timeout", agentnri.DefaultHookTimeout, "how long the wait hook waits for a pod's interfaces before failing its container (the kubelet then creates it again)")
	flag.BoolVar(&f.nriRestartUnheld, "nri-restart-unheld", true, "with --nri-socket: stop the containers of a pod held by NRI that the runtime started before the pod's networks were attached (the plugin hung or away), once each, so that the kubelet starts them again with their networks")
	flag.StringVar(&f.draKubeletDir, "dra-kubelet-dir", "", "the kubelet's root directory (e.g. /var/lib/kubelet), at the same path as on the node: the agent serves the Dynamic Resource Allocation plugin of driver "+v1alpha1.DRADriver+" there and publishes this node's ResourceSlices; empty: not served")
	flag.StringVar(&f.daemonSet, "daemonset", "", "the agent's own DaemonSet, namespace/name, watched for the uninstall mark "+v1alpha1.UninstallAnnotation+" (podnet-controller uninstall); empty: not watched")
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	if err := run(f); err != nil {
		fmt.Fprintf(os.Stderr, "podnet-agent: %v\n", err)
		os.Exit(1)
	}
}

func validateFlags(f flags) error {
	var errs []error
	if f.nodeName == "" {
		errs = append(errs, errors.New("--node-name: must be set (or $NODE_NAME)"))
	}
	if f.resync < time.Second {
		errs = append(errs, fmt.Errorf("--resync %s: must be at least 1s", f.resync))
	}
	if err := kubeclient.ValidateLimits(f.qps, f.burst); err != nil {
		errs = append(errs, err)
	}
	if _, err := agent.WantMultusStatus(f.multusStatus, false); err != nil {
		errs = append(errs, err)
	}
	if f.clusterNetwork == "" {
		errs = append(errs, errors.New("--cluster-network-name: must not be empty"))
	}
	if _, err := daemonSetKey(f.daemonSet); err != nil {
		errs = append(errs, err)
	}
	if f.nriSocket != "" && !filepath.IsAbs(f.nriSocket) {
		errs = append(errs, fmt.Errorf("--nri-socket %q: must be an absolute path", f.nriSocket))
	}
	if f.draKubeletDir != "" && !filepath.IsAbs(f.draKubeletDir) {
		errs = append(errs, fmt.Errorf("--dra-kubelet-dir %q: must be an absolute path", f.draKubeletDir))
	}
	if err := agentnri.ValidateCreateWait(f.nriCreateWait); err != nil {
		errs = append(errs, err)
	}
	if f.nriHook != "" && (f.nriSocket == "" || !filepath.IsAbs(f.nriHook)) {
		errs = append(errs, fmt.Errorf("--nri-hook %q: must be an absolute path, with --nri-socket", f.nriHook))
	}
	if err := agentnri.ValidateHookTimeout(f.nriHookTimeout); err != nil {
		errs = append(errs, err)
	}
	if f.concurrency < 1 || f.concurrency > 64 {
		errs = append(errs, fmt.Errorf("--concurrency %d: must be between 1 and 64", f.concurrency))
	}
	if f.sandboxPoll < 5*time.Millisecond || f.sandboxPoll > 10*time.Second {
		errs = append(errs, fmt.Errorf("--sandbox-poll-interval %s: must be between 5ms and 10s", f.sandboxPoll))
	}
	return errors.Join(errs...)
}

// run assembles the agent from its parts (parts.go) and runs it: what
// every agent has, then each step its flags ask for.
func run(f flags) error {
	if err := validateFlags(f); err != nil {
		return err
	}
	p, err := newParts(f)
	if err != nil {
		return err
	}
	defer p.conn.Close()
	for _, s := range steps {
		if s.on != nil && !s.on(f) {
			continue
		}
		if err := s.add(p); err != nil {
			return err
		}
	}
	return p.mgr.Start(ctrl.SetupSignalHandler())
}

// daemonSetKey parses --daemonset; "" is nil.
func daemonSetKey(s string) (*types.NamespacedName, error) {
	if s == "" {
		return nil, nil
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--daemonset %q: must be namespace/name", s)
	}
	return &types.NamespacedName{Namespace: ns, Name: name}, nil
}

// multusStatusSetting resolves --multus-network-status, asking the API
// server once whether Multus is there only when the setting is auto.
func multusStatusSetting(cfg *rest.Config, hc *http.Client, mode string) (bool, error) {
	detected := false
	if mode == agent.MultusStatusAuto {
		dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
		if err != nil {
			return false, fmt.Errorf("--multus-network-status: %w", err)
		}
		if detected, err = agent.MultusDetected(dc); err != nil {
			return false, fmt.Errorf("--multus-network-status: %w", err)
		}
	}
	on, err := agent.WantMultusStatus(mode, detected)
	ctrl.Log.WithName("setup").Info("network-status under Multus' key", "setting", mode, "multusDetected", detected, "write", on)
	return on, err
}

// watchNodePolicy makes the cache hold the node's NodePolicy where the
// API server serves NodePolicies, asking it once.
func watchNodePolicy(cfg *rest.Config, opts *cache.Options, node string) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, fmt.Errorf("nodepolicies: %w", err)
	}
	served, err := agent.WatchNodePolicy(dc, opts, node)
	if err != nil {
		return false, fmt.Errorf("nodepolicies: %w", err)
	}
	ctrl.Log.WithName("setup").Info("network policy from the node's NodePolicy", "served", served)
	return served, nil
}

// serveCNI answers the chained CNI plugin on socket: the reconciler takes
// the sandbox the plugin names and answers it after each attach.
// A request's netns is checked against the runtime's records and is never
// the node's.
func serveCNI(mgr ctrl.Manager, attaches *sandbox.Handshake, socket string) error {
	log := ctrl.Log.WithName("cni")
	srv := &cnisocket.Server{Path: socket, Attacher: attaches, Failed: func(err error) { log.Error(err, "request") }}
	if err := mgr.Add(srv); err != nil {
		return fmt.Errorf("--cni-socket: %w", err)
	}
	return nil
}

// serveDRA serves the DRA kubelet plugin: this node's ResourceSlices
// from the profile cache, and each prepared claim handed to claims, which
// verifies its approval and has the reconciler attach its interfaces with
// the pod's own.
func serveDRA(mgr ctrl.Manager, cfg *rest.Config, f flags, claims *agentdra.ClaimNetworks, have *nodecarry.Labeler) (*agentdra.Plugin, error) {
	kube, err := kubernetes.NewForConfigAndClient(cfg, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("--dra-kubelet-dir: %w", err)
	}
	p := &agentdra.Plugin{
		NodeName: f.nodeName, KubeletDir: f.draKubeletDir, Kube: kube, Profiles: mgr.GetCache(),
		// The same rule as the node's carry labels; nothing is published
		// before the node's first probe, which kicks a publish.
		Carries: func(_ *v1alpha1.NetworkProfile, n *v1alpha1.Network) bool {
			node, known := have.Have()
			return known && carry.Carries(node, n)
		},
		NICs: func() []hostdev.NIC {
			node, _ := have.Have()
			return node.NICs
		},
		Preparer: claims.Preparer(), Log: ctrl.Log.WithName("dra"),
	}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("--dra-kubelet-dir: %w", err)
	}
	return p, nil
}

// serveNRI registers the agent's NRI plugin with the runtime at socket:
// it starts attaches through the same path as the CNI plugin's requests.
func serveNRI(mgr ctrl.Manager, attaches *sandbox.Handshake, dp *dataplane.Dataplane, f flags) (*agentnri.Plugin, error) {
	m, err := agentnri.NewMetrics(metrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("--nri-socket: metrics: %w", err)
	}
	if f.nriHook != "" {
		// The agent's own podnet-wait, so the hook is always the
		// agent's release.
		if err := nodefile.Install(f.nriHookFrom, filepath.Dir(f.nriHook), filepath.Base(f.nriHook)); err != nil {
			return nil, fmt.Errorf("--nri-hook: %w", err)
		}
	}
	p := &agentnri.Plugin{Attacher: nriAttacher{attaches}, Socket: f.nriSocket, CreateWait: f.nriCreateWait,
		Hook: f.nriHook, HookTimeout: f.nriHookTimeout, Metrics: m, Log: ctrl.Log.WithName("nri"), Release: dp.ReleaseDevices}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("--nri-socket: %w", err)
	}
	return p, nil
}

// probeNRI probes the runtime for NRI's default validator each time the
// NRI plugin (nil without --nri-socket) connects, and reports the answer
// on the node's Node.
func probeNRI(mgr ctrl.Manager, label nodehold.Label, plugin *agentnri.Plugin, conn *grpc.ClientConn) (*nodehold.NRIProbe, error) {
	var prober nodehold.Prober
	if plugin != nil {
		prober = nriprobe.New(conn)
	}
	p, err := nodehold.NewNRIProbe(metrics.Registry, prober, label.Set, ctrl.Log.WithName("nri-probe"))
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	if plugin != nil {
		plugin.OnConnect = p.Kick
	}
	if err := mgr.Add(p); err != nil {
		return nil, fmt.Errorf("nri validator probe: %w", err)
	}
	return p, nil
}

// nriAttacher gives the NRI plugin sandbox.Handshake's tickets.
type nriAttacher struct{ s *sandbox.Handshake }

func (a nriAttacher) Start(ctx context.Context, req cnisocket.Request) (agentnri.Attach, error) {
	t, err := a.s.StartFromRuntime(ctx, req)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// runInstallCNI is the agent's install init container: it copies the
// chained CNI plugin into the node's CNI bin folder.
func runInstallCNI(args []string) int {
	fs := flag.NewFlagSet("podnet-agent install-cni", flag.ContinueOnError)
	from := fs.String("from", "/usr/local/bin/podnet-cni", "the plugin binary in the agent image")
	to := fs.String("to", "/host/cni/bin", "the node's CNI bin folder, mounted from the host")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := cniplugin.Install(*from, *to); err != nil {
		fmt.Fprintf(os.Stderr, "podnet-agent install-cni: %v\n", err)
		return 1
	}
	fmt.Printf("podnet-agent install-cni: %s installed as %s/%s\n", *from, *to, cniplugin.Type)
	return 0
}

// lookForLegacyClaims tells the allocator whether claims of the former
// name scheme are left; while any is, or when the list fails, every new
// claim is checked against them (ipam.Allocator.LookForLegacyClaims).
func lookForLegacyClaims(alloc *ipam.Allocator) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := ctrl.Log.WithName("ipam")
	n, err := alloc.LookForLegacyClaims(ctx)
	switch {
	case err != nil:
		log.Error(err, "could not look for IPClaims of the former name scheme; every new claim checks for one")
	case n > 0:
		log.Info("IPClaims of the former name scheme are left; every new claim checks for one", "count", n)
	}
}
