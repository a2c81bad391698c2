package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"podnet.io/podnet/cniplugin"
	"podnet.io/podnet/hack/image"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a running local cluster.
type Cluster struct {
	Name string
	// Dir holds every file of the cluster: _output/cluster/<Name>.
	Dir string
	// Kubeconfig is the admin kubeconfig for host-side clients (kubectl,
	// client-go in tests); it points at the loopback forwarder.
	Kubeconfig string
	// Server is the forwarder's URL, https://127.0.0.1:<port>.
	Server string
	Nodes  []Node
	// Snapshotter is the containerd snapshotter of every node
	// (SnapshotterOverlayfs or SnapshotterNative, see ChooseSnapshotter).
	Snapshotter string
	// AttachAtSandboxSetup: see Options.AttachAtSandboxSetup.
	AttachAtSandboxSetup bool
	// OwnCNIBinDir: see Options.OwnCNIBinDir.
	OwnCNIBinDir bool
	// Runtime is every node's container runtime (see Options.Runtime).
	Runtime string
	// NRIDefaultValidator: see Options.NRIDefaultValidator.
	NRIDefaultValidator bool
	// NRITolerateAnnotation: see Options.NRITolerateAnnotation.
	NRITolerateAnnotation string

	root   string
	layout layout
	log    io.Writer
}

// Node is one kubelet + containerd pair.
type Node struct {
	// Name is the Kubernetes node name.
	Name string
	// NetNS is the path of the node's network namespace; pod netns hang off
	// it through the node's CNI bridge.
	NetNS string
	// IP is the node's InternalIP (kubelet listens there).
	IP string
	// DataNIC is the node's data NIC, joined to the other node's (see
	// DataNIC); "" in a 1-node cluster.
	DataNIC string
	// PodCIDR is the node's pod range (host-local IPAM of its CNI bridge).
	PodCIDR string
	// CRISocket is the runtime's CRI socket path (no unix:// prefix):
	// <cluster Dir>/<node Name>/containerd.sock (NodeCRISocket). Being named after
	// the node, a DaemonSet that mounts the cluster folder finds its own
	// node's socket as <mount>/$(NODE_NAME)/containerd.sock.
	CRISocket string
	// NRISocket is where the node's runtime serves NRI plugins:
	// <cluster Dir>/<node Name>/nri.sock (NodeNRISocket); nothing serves
	// it on containerd 1.6.
	NRISocket string
	// CNIConfDir is the folder of the node's CNI configuration, which its
	// containerd reads (the first file by name wins).
	CNIConfDir string
}

// state is what cluster.json records, enough to find and tear down a
// cluster from another process.
type state struct {
	Name   string `json:"name"`
	Index  int    `json:"index"`
	Nodes  int    `json:"nodes"`
	Server string `json:"server,omitempty"`
	// Snapshotter is empty in clusters recorded before it was chosen.
	Snapshotter string `json:"snapshotter,omitempty"`
	// AttachAtSandboxSetup: see Options.
	AttachAtSandboxSetup bool `json:"attachAtSandboxSetup,omitempty"`
	// OwnCNIBinDir: see Options.
	OwnCNIBinDir bool `json:"ownCNIBinDir,omitempty"`
	// Runtime is empty in clusters recorded before it could be chosen
	// (RuntimeContainerd).
	Runtime string `json:"runtime,omitempty"`
	// NRIDefaultValidator: see Options.
	NRIDefaultValidator bool `json:"nriDefaultValidator,omitempty"`
	// NRITolerateAnnotation: see Options.
	NRITolerateAnnotation string `json:"nriTolerateAnnotation,omitempty"`
}

const stateFile = "cluster.json"

// maxSocketPath is sun_path's size on Linux minus the terminating NUL.
const maxSocketPath = 107

// ClusterDir is where a cluster's files live.
func ClusterDir(root, name string) string {
	return filepath.Join(root, "_output", "cluster", name)
}

// BinDir is where the Kubernetes commands are built (hack/build-k8s.sh).
func BinDir(root string) string { return filepath.Join(root, "_output", "k8s", "bin") }

// Up brings a cluster up from nothing and waits until every node is Ready
// and the default ServiceAccount exists. When a healthy cluster of that
// name already runs it returns it; leftovers of a dead one are torn down
// first. On failure everything started is stopped again (logs stay in
// Dir/logs).
func Up(ctx context.Context, o Options) (*Cluster, error) {
	o, err := validateOptions(o)
	if err != nil {
		return nil, err
	}
	if c, err := Load(o.Name, o.Root); err == nil {
		c.log = o.Log
		if len(c.Nodes) != o.Nodes {
			return nil, fmt.Errorf("cluster %q runs with %d nodes, asked for %d: bring it down first", o.Name, len(c.Nodes), o.Nodes)
		}
		if c.AttachAtSandboxSetup != o.AttachAtSandboxSetup {
			return nil, fmt.Errorf("cluster %q runs with attach at sandbox setup %v, asked for %v: bring it down first", o.Name, c.AttachAtSandboxSetup, o.AttachAtSandboxSetup)
		}
		if c.OwnCNIBinDir != o.OwnCNIBinDir {
			return nil, fmt.Errorf("cluster %q runs with its own CNI bin folder %v, asked for %v: bring it down first", o.Name, c.OwnCNIBinDir, o.OwnCNIBinDir)
		}
		if c.Runtime != o.Runtime {
			return nil, fmt.Errorf("cluster %q runs on runtime %q, asked for %q: bring it down first", o.Name, c.Runtime, o.Runtime)
		}
		if c.NRIDefaultValidator != o.NRIDefaultValidator || c.NRITolerateAnnotation != o.NRITolerateAnnotation {
			return nil, fmt.Errorf("cluster %q runs with the NRI default validator %v (tolerate annotation %q), asked for %v (%q): bring it down first",
				o.Name, c.NRIDefaultValidator, c.NRITolerateAnnotation, o.NRIDefaultValidator, o.NRITolerateAnnotation)
		}
		err := c.checkHealthy(ctx)
		if err == nil {
			logf(o.Log, "cluster %q already running, reusing it", o.Name)
			return c, nil
		}
		logf(o.Log, "cluster %q is not healthy (%v): recreating it", o.Name, err)
	}
	if err := Down(ctx, o.Name, o.Root); err != nil {
		return nil, fmt.Errorf("clean up leftovers of cluster %q: %w", o.Name, err)
	}
	start := time.Now()
	c, err := claimLayout(o)
	if err != nil {
		return nil, err
	}
	if err := c.up(ctx); err != nil {
		logf(o.Log, "cluster %q failed to come up: %v; tearing it down (logs in %s)", o.Name, err, filepath.Join(c.Dir, "logs"))
		if derr := c.Down(context.WithoutCancel(ctx)); derr != nil {
			err = errors.Join(err, derr)
		}
		return nil, err
	}
	logf(o.Log, "cluster %q up in %s: KUBECONFIG=%s", o.Name, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig)
	return c, nil
}

// Load attaches to a cluster started earlier, possibly by another process
// (the CLI). It does not check that the cluster is healthy.
func Load(name, root string) (*Cluster, error) {
	if err := validateName(name); err != nil {
		return nil, err
	}
	st, err := readState(ClusterDir(root, name))
	if err != nil {
		return nil, err
	}
	c := newCluster(root, planLayout(name, st.Index, st.Nodes), io.Discard)
	c.Server = st.Server
	c.Snapshotter = snapshotterOfState(st)
	c.AttachAtSandboxSetup = st.AttachAtSandboxSetup
	c.NRIDefaultValidator = st.NRIDefaultValidator
	c.NRITolerateAnnotation = st.NRITolerateAnnotation
	// A cluster recorded before OwnCNIBinDir had its own folder only
	// when attaching at sandbox setup.
	c.OwnCNIBinDir = st.OwnCNIBinDir || st.AttachAtSandboxSetup
	c.Runtime, err = validateRuntime(st.Runtime)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: recorded %w", name, err)
	}
	return c, nil
}

func newCluster(root string, l layout, log io.Writer) *Cluster {
	dir := ClusterDir(root, l.Name)
	c := &Cluster{
		Name:       l.Name,
		Dir:        dir,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		root:       root,
		layout:     l,
		log:        log,
	}
	for _, n := range l.Nodes {
		c.Nodes = append(c.Nodes, Node{
			Name:       n.Name,
			NetNS:      netnsPath(n.NetNS),
			IP:         n.IP.String(),
			DataNIC:    n.DataIf,
			PodCIDR:    n.PodCIDR.String(),
			CRISocket:  pathsOf(dir, n).CRISocket,
			NRISocket:  pathsOf(dir, n).NRISocket,
			CNIConfDir: pathsOf(dir, n).CNIConfDir,
		})
	}
	return c
}

func readState(dir string) (state, error) {
	var st state
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, fmt.Errorf("read cluster state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("parse cluster state %q: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

func (c *Cluster) writeState() error {
	b, err := json.MarshalIndent(state{Name: c.Name, Index: c.layout.Index, Nodes: len(c.Nodes), Server: c.Server, Snapshotter: c.Snapshotter, AttachAtSandboxSetup: c.AttachAtSandboxSetup, OwnCNIBinDir: c.OwnCNIBinDir, Runtime: c.Runtime, NRIDefaultValidator: c.NRIDefaultValidator, NRITolerateAnnotation: c.NRITolerateAnnotation}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.Dir, stateFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write cluster state: %w", err)
	}
	values, err := HelmValues(c.Dir, c.AttachAtSandboxSetup, c.NRITolerateAnnotation)
	if err != nil {
		return fmt.Errorf("the cluster's Helm values: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, HelmValuesFile), values, 0o644); err != nil {
		return fmt.Errorf("write the cluster's Helm values: %w", err)
	}
	return nil
}

// usedIndices collects the address indices of the other clusters under
// the same root, so a new cluster never shares their ranges.
func usedIndices(root, except string) (map[int]bool, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "_output", "cluster", "*", stateFile))
	if err != nil {
		return nil, err
	}
	used := map[int]bool{}
	for _, f := range dirs {
		d := filepath.Dir(f)
		if filepath.Base(d) == except {
			continue
		}
		if st, err := readState(d); err == nil {
			used[st.Index] = true
		}
	}
	return used, nil
}

// claimLayout picks an address index no other cluster under the same
// root uses and records it in the new cluster's state, holding a lock so
// that two clusters starting at once cannot pick the same one.
func claimLayout(o Options) (*Cluster, error) {
	parent := filepath.Join(o.Root, "_output", "cluster")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %q: %w", parent, err)
	}
	lock, err := os.OpenFile(filepath.Join(parent, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open cluster lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %q: %w", lock.Name(), err)
	}
	used, err := usedIndices(o.Root, o.Name)
	if err != nil {
		return nil, err
	}
	idx, err := pickIndex(o.Name, used)
	if err != nil {
		return nil, err
	}
	c := newCluster(o.Root, planLayout(o.Name, idx, o.Nodes), o.Log)
	c.AttachAtSandboxSetup = o.AttachAtSandboxSetup
	c.OwnCNIBinDir = o.OwnCNIBinDir
	c.Runtime = o.Runtime
	c.NRIDefaultValidator = o.NRIDefaultValidator
	c.NRITolerateAnnotation = o.NRITolerateAnnotation
	// The state goes first: a failed or interrupted Up must be found and
	// torn down by the next Up or Down.
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cluster folder: %w", err)
	}
	return c, c.writeState()
}

// up performs every step; on error the caller tears down.
func (c *Cluster) up(ctx context.Context) error {
	l := c.layout
	bin := BinDir(c.root)
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return fmt.Errorf("kubernetes command %q missing in %s (run hack/build-k8s.sh): %w", b, bin, err)
		}
	}
	// Down keeps the logs of the last run for a post-mortem; a new run
	// starts with fresh ones.
	if err := os.RemoveAll(filepath.Join(c.Dir, "logs")); err != nil {
		return fmt.Errorf("remove old logs: %w", err)
	}
	if err := c.checkSocketPaths(); err != nil {
		return err
	}
	runtime, err := c.ensureRuntime(ctx)
	if err != nil {
		return err
	}
	c.step("building the forwarder and the test images")
	tool := filepath.Join(c.Dir, "bin", "localcluster")
	if err := image.BuildGoBinary(ctx, c.root, "./hack/localcluster/cmd/localcluster", tool); err != nil {
		return err
	}
	images, err := image.EnsureTestImages(ctx, c.root)
	if err != nil {
		return err
	}
	if err := c.chooseSnapshotter(); err != nil {
		return err
	}
	c.step("writing PKI and configuration")
	pki := filepath.Join(c.Dir, "pki")
	if err := ensurePKI(pki, l); err != nil {
		return err
	}
	if err := c.writeConfigs(image.PauseImage); err != nil {
		return err
	}
	if c.AttachAtSandboxSetup {
		// Every sandbox runs the whole conflist: without the plugin in the
		// bin folder no pod would start, not even cert-manager's, before
		// the agent's install step puts the image's copy there.
		c.step("building podnet's CNI plugin into the cluster's CNI bin folder")
		if err := image.BuildGoBinary(ctx, c.root, image.CNICommand, filepath.Join(c.Dir, CNIBinDirName, cniplugin.Type)); err != nil {
			return err
		}
	}
	c.step("creating network namespaces")
	if err := ensureNetwork(l); err != nil {
		return err
	}
	if err := c.startForwarder(ctx, tool); err != nil {
		return err
	}
	c.step("starting etcd and the control plane")
	for _, p := range c.controlPlane() {
		if _, err := startProcess(c.Dir, p.name, l.NetNS, p.argv); err != nil {
			return err
		}
		if p.name == "kube-apiserver" {
			if err := c.waitAPIServer(ctx); err != nil {
				return err
			}
		}
	}
	for i, n := range l.Nodes {
		c.step("starting node " + n.Name)
		p := pathsOf(c.Dir, n)
		if err := c.startRuntime(ctx, runtime, n); err != nil {
			return err
		}
		// The sandbox image must be there before kubelet creates a pod:
		// nothing is ever pulled.
		if err := ImportInto(ctx, c.Runtime, c.runtimePaths(n), c.Snapshotter, images[image.PauseImage]); err != nil {
			return err
		}
		if _, err := startProcess(c.Dir, "kube-proxy-"+n.Dir, n.NetNS, []string{filepath.Join(bin, "kube-proxy"), "--config", p.ProxyConf}); err != nil {
			return err
		}
		if err := makeCgroupRoot(cgroupRootOf(n.Name)); err != nil {
			return err
		}
		if _, err := startProcess(c.Dir, "kubelet-"+n.Dir, n.NetNS, c.kubeletArgv(i)); err != nil {
			return err
		}
	}
	c.step("waiting for nodes to be Ready")
	return c.waitReady(ctx)
}

// chooseSnapshotter decides once, for every node, on the first node's
// containerd folder (all nodes share the cluster folder's filesystem),
// and records the choice so that later imports (ImportImage from another
// process) use it too.
func (c *Cluster) chooseSnapshotter() error {
	dir := pathsOf(c.Dir, c.layout.Nodes[0]).CRIDir
	name, note, err := ChooseSnapshotter(dir)
	if err != nil {
		return fmt.Errorf("cluster %q: choose containerd snapshotter: %w", c.Name, err)
	}
	c.Snapshotter = name
	c.step(fmt.Sprintf("containerd snapshotter %s: %s", name, note))
	return c.writeState()
}

// CNIBinDir is the folder every node's containerd runs CNI plugins from:
// the cluster's own (CNIBinDirName) with OwnCNIBinDir, else the machine's.
func (c *Cluster) CNIBinDir() string {
	if c.OwnCNIBinDir {
		return filepath.Join(c.Dir, CNIBinDirName)
	}
	return SystemCNIBinDir
}

// InternalKubeconfig is an admin kubeconfig for clients inside a node's
// network namespace (a CNI plugin run by containerd): it names the API
// server's address there, not the host-side forwarder.
func (c *Cluster) InternalKubeconfig() string {
	return filepath.Join(c.Dir, internalKubeconfig)
}

func (c *Cluster) step(s string) { logf(c.log, "cluster %q: %s", c.Name, s) }

func logf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// writeConfigs writes kubeconfigs and per-node configuration files.
func (c *Cluster) writeConfigs(sandboxImage string) error {
	l := c.layout
	pki := filepath.Join(c.Dir, "pki")
	ca := filepath.Join(pki, "ca.crt")
	inside := fmt.Sprintf("https://%s", net.JoinHostPort(l.Nodes[0].IP.String(), strconv.Itoa(apiserverPort)))
	// Components inside the cluster netns talk to the API server directly.
	if err := writeKubeconfig(c.InternalKubeconfig(), inside, ca,
		filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), "admin"); err != nil {
		return err
	}
	if c.OwnCNIBinDir {
		if err := LinkCNIPlugins(c.CNIBinDir()); err != nil {
			return err
		}
	}
	for _, n := range l.Nodes {
		p := pathsOf(c.Dir, n)
		for _, d := range []string{p.Dir, p.CNIConfDir, p.CNIDataDir, p.KubeletRoot, p.PodLogsDir, p.RuncRoot} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return fmt.Errorf("create %q: %w", d, err)
			}
		}
		socket := ""
		if c.AttachAtSandboxSetup {
			socket = filepath.Join(p.Dir, NodeCNISocket)
		}
		cni, err := renderCNIConfig(n, p, socket)
		if err != nil {
			return err
		}
		criConfig, err := RuntimeConfig(c.root, c.Runtime, c.runtimePaths(n), sandboxImage, c.Snapshotter)
		if err != nil {
			return err
		}
		files := map[string]string{
			p.CRIConfig: criConfig,
			filepath.Join(p.CNIConfDir, "10-pn.conflist"): cni,
			p.KubeletConf: renderKubeletConfig(n, p, ca),
			p.ProxyConf:   renderKubeProxyConfig(n, p, l),
			// Pods get no DNS server: the cluster runs no DNS add-on, and the
			// machine's resolvers are unreachable from inside the netns.
			p.ResolvConf: "",
		}
		for path, content := range files {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				return fmt.Errorf("write %q: %w", path, err)
			}
		}
		if err := writeKubeconfig(p.KubeletKube, inside, ca, p.ClientCert, p.ClientKey, "system:node:"+n.Name); err != nil {
			return err
		}
		if err := writeKubeconfig(p.ProxyKube, inside, ca, filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), "admin"); err != nil {
			return err
		}
	}
	return nil
}

type component struct {
	name string
	argv []string
}

// controlPlane lists etcd and the control plane in start order.
func (c *Cluster) controlPlane() []component {
	l := c.layout
	bin := BinDir(c.root)
	pki := filepath.Join(c.Dir, "pki")
	kc := c.InternalKubeconfig()
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeerPort)
	return []component{
		{"etcd", append([]string{"etcd"}, flags(map[string]string{
			"name":                        "default",
			"data-dir":                    filepath.Join(c.Dir, "etcd"),
			"listen-client-urls":          etcdURL,
			"advertise-client-urls":       etcdURL,
			"listen-peer-urls":            peerURL,
			"initial-advertise-peer-urls": peerURL,
			"initial-cluster":             "default=" + peerURL,
			"log-level":                   "warn",
		})...)},
		{"kube-apiserver", append([]string{filepath.Join(bin, "kube-apiserver")}, flags(map[string]string{
			"etcd-servers":                     etcdURL,
			"bind-address":                     "0.0.0.0",
			"secure-port":                      strconv.Itoa(apiserverPort),
			"advertise-address":                l.Nodes[0].IP.String(),
			"service-cluster-ip-range":         l.ServiceCIDR.String(),
			"client-ca-file":                   filepath.Join(pki, "ca.crt"),
			"tls-cert-file":                    filepath.Join(pki, "apiserver.crt"),
			"tls-private-key-file":             filepath.Join(pki, "apiserver.key"),
			"kubelet-client-certificate":       filepath.Join(pki, "apiserver-kubelet-client.crt"),
			"kubelet-client-key":               filepath.Join(pki, "apiserver-kubelet-client.key"),
			"kubelet-certificate-authority":    filepath.Join(pki, "ca.crt"),
			"kubelet-preferred-address-types":  "InternalIP",
			"service-account-issuer":           "https://kubernetes.default.svc.cluster.local",
			"service-account-key-file":         filepath.Join(pki, "sa.pub"),
			"service-account-signing-key-file": filepath.Join(pki, "sa.key"),
			"authorization-mode":               "Node,RBAC",
			"enable-admission-plugins":         "NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
			// Webhook calls to Services go straight to endpoint pod IPs: the
			// API server has no kube-proxy rules of its own to rely on.
			"enable-aggregator-routing": "true",
			"allow-privileged":          "true",
			"profiling":                 "false",
		})...)},
		{"kube-controller-manager", append([]string{filepath.Join(bin, "kube-controller-manager")}, flags(map[string]string{
			"kubeconfig":                       kc,
			"authentication-kubeconfig":        kc,
			"authorization-kubeconfig":         kc,
			"bind-address":                     "127.0.0.1",
			"leader-elect":                     "false",
			"service-account-private-key-file": filepath.Join(pki, "sa.key"),
			"root-ca-file":                     filepath.Join(pki, "ca.crt"),
			"cluster-signing-cert-file":        filepath.Join(pki, "ca.crt"),
			"cluster-signing-key-file":         filepath.Join(pki, "ca.key"),
			"service-cluster-ip-range":         l.ServiceCIDR.String(),
			"allocate-node-cidrs":              "false",
			"use-service-account-credentials":  "true",
			"controllers":                      "*",
		})...)},
		{"kube-scheduler", append([]string{filepath.Join(bin, "kube-scheduler")}, flags(map[string]string{
			"kubeconfig":                kc,
			"authentication-kubeconfig": kc,
			"authorization-kubeconfig":  kc,
			"bind-address":              "127.0.0.1",
			"leader-elect":              "false",
		})...)},
	}
}

func (c *Cluster) kubeletArgv(i int) []string {
	n := c.layout.Nodes[i]
	p := pathsOf(c.Dir, n)
	return append([]string{filepath.Join(BinDir(c.root), "kubelet")}, flags(map[string]string{
		"config":            p.KubeletConf,
		"kubeconfig":        p.KubeletKube,
		"root-dir":          p.KubeletRoot,
		"cert-dir":          filepath.Join(p.KubeletRoot, "pki"),
		"hostname-override": n.Name,
		"node-ip":           n.IP.String(),
		"v":                 "1",
	})...)
}

// startForwarder starts the loopback forwarder process and writes the
// host-side admin kubeconfig that points at it.
func (c *Cluster) startForwarder(ctx context.Context, tool string) error {
	addrFile := filepath.Join(c.Dir, "run", "forward.addr")
	_ = os.Remove(addrFile)
	target := net.JoinHostPort(c.layout.Nodes[0].IP.String(), strconv.Itoa(apiserverPort))
	if _, err := startProcess(c.Dir, "forward", "", []string{tool, "forward",
		"--netns", netnsPath(c.layout.NetNS), "--target", target, "--addr-file", addrFile}); err != nil {
		return err
	}
	var addr string
	if err := waitFor(ctx, 20*time.Second, "forwarder address in "+addrFile, func() error {
		b, err := os.ReadFile(addrFile)
		addr = strings.TrimSpace(string(b))
		if err == nil && addr == "" {
			err = errors.New("empty")
		}
		return err
	}); err != nil {
		return err
	}
	c.Server = "https://" + addr
	pki := filepath.Join(c.Dir, "pki")
	if err := writeKubeconfig(c.Kubeconfig, c.Server, filepath.Join(pki, "ca.crt"),
		filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key"), "admin"); err != nil {
		return err
	}
	return c.writeState()
}

// RESTConfig is an admin client configuration for host-side clients. It
// carries the CA's certificate, not its file: client-go keys its shared
// transports by the CA file's path and rereads that file only every 5
// minutes, so a cluster brought up again under the same name within one
// process (the burst bench's modes) would be checked against the previous
// cluster's CA until then.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig of cluster %q: %w", c.Name, err)
	}
	if cfg.CAFile != "" && len(cfg.CAData) == 0 {
		ca, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA of cluster %q: %w", c.Name, err)
		}
		cfg.CAData, cfg.CAFile = ca, ""
	}
	return cfg, nil
}

func (c *Cluster) clientset() (*kubernetes.Clientset, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

func (c *Cluster) waitAPIServer(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	return waitFor(ctx, 90*time.Second, "kube-apiserver /readyz", func() error {
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// waitReady waits until every node is Ready and the default
// ServiceAccount exists (pods cannot be created before it does).
func (c *Cluster) waitReady(ctx context.Context) error {
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := waitFor(ctx, 3*time.Minute, "node "+n.Name+" Ready", func() error {
			node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					if cond.Status == corev1.ConditionTrue {
						return nil
					}
					return fmt.Errorf("%s: %s", cond.Reason, cond.Message)
				}
			}
			return errors.New("no Ready condition yet")
		}); err != nil {
			return err
		}
	}
	// No controller allocates node CIDRs here (each node's CNI config has
	// its range already); recording them on the Node objects keeps what
	// clients read from the API true.
	// The control plane runs outside the nodes here; the first node stands
	// for a control-plane node, the one trusted with podnet's signing key
	// and controller (deploy/ schedules them on such nodes). A kubelet may
	// not set node-role labels itself.
	for i, n := range c.Nodes {
		labels := ""
		if i == 0 {
			labels = fmt.Sprintf(`"metadata":{"labels":{%q:""}},`, ControlPlaneLabel)
		}
		patch := fmt.Sprintf(`{%s"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, labels, n.PodCIDR, n.PodCIDR)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("label node %q and record its pod CIDR: %w", n.Name, err)
		}
	}
	return waitFor(ctx, time.Minute, "default ServiceAccount", func() error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// ControlPlaneLabel marks the nodes that run the control plane: podnet's
// webhook and controller run only there by default.
const ControlPlaneLabel = "node-role.kubernetes.io/control-plane"

// checkHealthy tells whether a loaded cluster can be reused: every
// recorded process runs and the API server answers through the forwarder.
func (c *Cluster) checkHealthy(ctx context.Context) error {
	recs, err := readRecords(c.Dir)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return errors.New("no recorded processes")
	}
	for _, r := range recs {
		if !r.alive() {
			return fmt.Errorf("%s (pid %d) is not running", r.Name, r.PID)
		}
	}
	cs, err := c.clientset()
	if err != nil {
		return err
	}
	if err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w", err)
	}
	return nil
}

// ImportImage imports an image tarball (docker-save, one image) into
// every node's runtime (ImportInto). Pods then run it with
// imagePullPolicy IfNotPresent or Never.
func (c *Cluster) ImportImage(ctx context.Context, tarball string) error {
	var errs []error
	for _, n := range c.layout.Nodes {
		if err := ImportInto(ctx, c.Runtime, c.runtimePaths(n), c.Snapshotter, tarball); err != nil {
			errs = append(errs, fmt.Errorf("node %q: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// waitFor polls check every 250ms until it succeeds, the timeout passes or
// ctx ends, and then names what it waited for and the last error.
func waitFor(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
