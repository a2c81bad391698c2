package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"podnet.io/podnet/agent"
	agentdra "podnet.io/podnet/agent/dra"
	"podnet.io/podnet/agent/nodecarry"
	"podnet.io/podnet/agent/nodehold"
	agentnri "podnet.io/podnet/agent/nri"
	"podnet.io/podnet/agent/peers"
	"podnet.io/podnet/agent/runtimeready"
	"podnet.io/podnet/agent/sandbox"
	"podnet.io/podnet/agent/uninstall"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/cristop"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/hold"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/kubeclient"
	"podnet.io/podnet/pkg/macpool"
	"podnet.io/podnet/pkg/underlay"
)

// approvalMemoSize is how many verified approvals the agent remembers:
// more than the pods a node runs (the kubelet's default limit is 110, a
// dense node's 250), so that a node's pods are each verified once.
const approvalMemoSize = 512

// parts are the agent's pieces as run assembles them: what newParts makes
// for every agent, and what the steps add to it.
type parts struct {
	f         flags
	keys      *certs.FileVerifier
	conn      *grpc.ClientConn
	resolver  *cri.Resolver
	cfg       *rest.Config
	mgr       ctrl.Manager
	dataplane *dataplane.Dataplane
	underlays *peers.Watch
	r         *agent.Reconciler
	// uninstall is nil when the agent does not watch its DaemonSet.
	uninstall *uninstall.Uninstall
	carries   *nodecarry.Labeler
	// handshake is nil without --cni-socket or --nri-socket.
	handshake *sandbox.Handshake
	// claims is nil without --dra-kubelet-dir.
	claims *agentdra.ClaimNetworks
	// nri is nil without --nri-socket.
	nri       *agentnri.Plugin
	holdLabel nodehold.Label
	probe     *nodehold.NRIProbe
}

// step is one optional or node-wide part of the agent, added after the
// ones before it in steps; on says whether these flags want it (nil:
// always).
type step struct {
	name string
	on   func(flags) bool
	add  func(*parts) error
}

// steps are the agent's parts beyond the pod reconcile's core, in the order
// each needs the ones before it: the claims before the sandbox-setup paths
// that hold their pods, the ways of holding a pod (holdHalves) before the
// hold check that judges them, every label writer before the uninstall
// that waits for them, and the reconciler last, watching all their
// sources.
var steps = slices.Concat(
	[]step{
		{"node labels of what the node carries", nil, (*parts).addCarry},
		{"DRA claims", func(f flags) bool { return f.draKubeletDir != "" }, (*parts).addClaims},
	},
	holdSteps(),
	[]step{
		{"NRI probe and the node's hold label", nil, (*parts).addHoldLabel},
		{"hold check", nil, (*parts).addHoldCheck},
		{"DRA plugin", func(f flags) bool { return f.draKubeletDir != "" }, (*parts).addDRA},
		{"uninstall", func(f flags) bool { return f.daemonSet != "" }, (*parts).addUninstall},
		{"pod reconcile", nil, (*parts).addReconciler},
		{"trusted keys", nil, (*parts).addTrustedKeys},
		{"runtime readiness", nil, (*parts).addRuntimeReady},
	},
)

// newParts makes what every agent has: the approval keys, the CRI
// connection, the manager and its clients, the allocators, the dataplane,
// the underlay peers and the reconciler over them.
func newParts(f flags) (_ *parts, err error) {
	p := &parts{f: f}
	if p.keys, err = certs.LoadVerifier(f.publicKey); err != nil {
		return nil, fmt.Errorf("--public-key: %w", err)
	}
	if p.resolver, p.conn, err = cri.Dial(f.criEndpoint); err != nil {
		return nil, fmt.Errorf("--cri-endpoint: %w", err)
	}
	// Parts that fail to build are not run: their CRI connection closes
	// here, and run sees nil.
	defer func() {
		if err != nil {
			p.conn.Close()
		}
	}()
	scheme, cfg, err := kubeclient.Setup(v1alpha1.AgentName+"/"+f.nodeName, f.qps, f.burst)
	if err != nil {
		return nil, err
	}
	p.cfg = cfg
	ds, _ := daemonSetKey(f.daemonSet)
	cacheOpts := agent.CacheOptions(f.nodeName)
	if ds != nil {
		uninstall.WatchDaemonSet(&cacheOpts, *ds)
	}
	nodePolicy, err := watchNodePolicy(cfg, &cacheOpts, f.nodeName)
	if err != nil {
		return nil, err
	}
	p.mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress: f.probeAddr,
		PprofBindAddress:       f.pprofAddr,
	})
	if err != nil {
		return nil, fmt.Errorf("manager: %w", err)
	}
	// The allocator's liveness checks must read the API server itself;
	// through the manager's connection and REST mapper, which a second
	// client would otherwise hold again (a TLS connection, the discovered
	// API groups).
	direct, err := client.New(cfg, client.Options{Scheme: scheme, HTTPClient: p.mgr.GetHTTPClient(), Mapper: p.mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	multusStatus, err := multusStatusSetting(cfg, p.mgr.GetHTTPClient(), f.multusStatus)
	if err != nil {
		return nil, err
	}
	m, err := agent.NewMetrics(metrics.Registry)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	// SetupWithManager indexes the cache's claims by pod.
	alloc := ipam.New(direct, p.mgr.GetClient()).WithPodIndex().WithPoolBackoff(ipam.NewPoolBackoff(agent.PoolBackoffBase, agent.PoolBackoffMax))
	lookForLegacyClaims(alloc)
	addrs := agent.IPAM{Allocator: alloc, MACs: macpool.New(direct, p.mgr.GetClient()).WithPodIndex()}
	p.dataplane = &dataplane.Dataplane{HostNetNS: f.hostNetNS, SysctlNet: f.sysctlNet}
	p.underlays = &peers.Watch{NodeName: f.nodeName, Dataplane: p.dataplane, Lock: &underlay.Table{NetNS: f.hostNetNS}}
	if err := p.underlays.SetupWithManager(p.mgr); err != nil {
		return nil, err
	}
	p.r = &agent.Reconciler{
		Client:       p.mgr.GetClient(),
		Events:       p.mgr.GetEventRecorder(v1alpha1.AgentName),
		NodeName:     f.nodeName,
		Sandboxes:    p.resolver,
		SandboxWaits: sandbox.NewWatch(p.resolver.Runtime, f.sandboxPoll),
		Dataplane:    p.dataplane,
		Addresses:    addrs,
		MACs:         addrs,
		NodeMACs:     agent.NetlinkNodeMACs{NetNS: f.hostNetNS},
		Verifier:     agent.SignedApprovals{Keys: p.keys, Memo: approval.NewMemo(approvalMemoSize)},
		Grants:       agent.CachedGrants{Reader: p.mgr.GetClient()},
		Metrics:      m,
		Underlays:    p.underlays,
		Tunnels:      p.underlays,
		Resync:       f.resync,
		NodePolicy:   nodePolicy,

		ClusterNetwork: f.clusterNetwork,
		MultusStatus:   multusStatus,
	}
	// The uninstall, when the agent watches for its mark: made here, as
	// the writers of the Node's labels ask it whether one is underway.
	if ds != nil {
		p.uninstall = &uninstall.Uninstall{DaemonSet: *ds, NodeName: f.nodeName, Node: p.dataplane, Overlays: p.underlays}
	}
	return p, nil
}

func (p *parts) addCarry() error {
	p.carries = &nodecarry.Labeler{NodeName: p.f.nodeName, Host: nodecarry.NetlinkHost{NetNS: p.f.hostNetNS}, Changed: p.r.CarryChanged, Off: p.uninstall.Underway}
	p.r.Carry = p.carries
	return p.carries.SetupWithManager(p.mgr)
}

func (p *parts) addClaims() error {
	p.claims = &agentdra.ClaimNetworks{Verify: func(c *resourceapi.ResourceClaim) (*v1alpha1.Approval, error) {
		return approval.VerifyClaim(p.keys, c)
	}}
	p.r.Claims = p.claims
	return nil
}

// addSandboxAttach makes the sandbox handshake, once: both sandbox-setup
// paths (the chained CNI plugin and NRI) start attaches through it.
func (p *parts) addSandboxAttach() error {
	if p.handshake != nil {
		return nil
	}
	s := &sandbox.Handshake{Reader: p.mgr.GetClient(), NodeName: p.r.NodeName, Verifier: p.r.Verifier,
		Records: p.resolver, HostNetNS: p.f.hostNetNS}
	if p.claims != nil {
		// A pod's prepared claims hold its sandbox as its approval does.
		s.Verifier, s.Claimed = p.claims.PodVerifier(p.r.Verifier), p.claims.Claimed
	}
	p.handshake, p.r.Attaches = s, s
	return nil
}

// addCNI serves the chained CNI plugin, on a runtime whose sandboxes can
// be checked while their CNI plugins run: elsewhere every request would
// be refused, so the agent says so and does not start.
func (p *parts) addCNI() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if v, err := runtimeapi.NewRuntimeServiceClient(p.conn).Version(ctx, &runtimeapi.VersionRequest{}); err == nil && !cri.RecordsDuringSetup(v.GetRuntimeName()) {
		return fmt.Errorf("--cni-socket: attach at sandbox setup needs a runtime that records a sandbox before its CNI plugins run (containerd); %s %s reports none, so no request could be checked: hold pods with NRI (--nri-socket, --hold-pods=nri) on this runtime",
			v.GetRuntimeName(), v.GetRuntimeVersion())
	}
	return serveCNI(p.mgr, p.handshake, p.f.cniSocket)
}

func (p *parts) addNRI() error {
	var err error
	if p.nri, err = serveNRI(p.mgr, p.handshake, p.dataplane, p.f); err != nil {
		return err
	}
	if p.claims != nil {
		p.nri.Claimed = p.claims.Claimed
	}
	p.r.NRIAsks = p.nri.Connected
	return nil
}

func (p *parts) addHoldLabel() error {
	p.holdLabel = nodehold.Label{Client: p.mgr.GetClient(), NodeName: p.f.nodeName, Off: p.uninstall.Underway}
	var err error
	p.probe, err = probeNRI(p.mgr, p.holdLabel, p.nri, p.conn)
	return err
}

func (p *parts) addUnheld() error {
	var err error
	if p.r.Unheld, err = nodehold.NewUnheldRestarts(metrics.Registry, cristop.New(p.conn)); err != nil {
		return fmt.Errorf("--nri-restart-unheld: %w", err)
	}
	return nil
}

func (p *parts) addHoldCheck() error {
	var err error
	p.r.Holds, err = nodehold.NewCheck(metrics.Registry, hold.OfAgent(p.f.cniSocket != "", p.f.nriSocket != ""), func() hold.Node {
		return hold.Node{NRI: p.nri != nil && p.nri.Connected(), NRIValidator: p.probe.Enforced(), ChainedCNI: p.f.cniSocket != ""}
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

func (p *parts) addDRA() error {
	plugin, err := serveDRA(p.mgr, p.cfg, p.f, p.claims, p.carries)
	if err != nil {
		return err
	}
	p.carries.Probed = plugin.Kick
	return nil
}

func (p *parts) addUninstall() error {
	p.uninstall.Labels = []uninstall.NodeLabels{p.carries, nodehold.Labels{Label: p.holdLabel, Probe: p.probe}}
	for _, f := range []string{p.f.cniSocket, p.f.nriHook} {
		if f != "" {
			p.uninstall.Files = append(p.uninstall.Files, f)
		}
	}
	p.r.Uninstall = p.uninstall
	return p.uninstall.SetupWithManager(p.mgr)
}

func (p *parts) addReconciler() error {
	sweeper, err := p.r.SetupWithManager(p.mgr, p.f.concurrency)
	if err != nil {
		return err
	}
	if err := p.mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	return p.mgr.AddReadyzCheck("swept", sweeper.Ready)
}

// addRuntimeReady makes the agent ready only while its runtime answers,
// and say why not on its Node.
func (p *parts) addRuntimeReady() error {
	c := &runtimeready.Check{Endpoint: p.f.criEndpoint, Runtime: runtimeapi.NewRuntimeServiceClient(p.conn), NodeName: p.f.nodeName,
		Events: p.mgr.GetEventRecorder(v1alpha1.AgentName)}
	return p.mgr.AddReadyzCheck("runtime", c.Ready)
}

func (p *parts) addTrustedKeys() error {
	trusted := &agent.TrustedKeys{File: p.keys, Log: ctrl.Log.WithName("keys")}
	if err := trusted.Register(metrics.Registry); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return p.mgr.AddReadyzCheck("trusted-keys", trusted.Ready)
}
