package localcluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"podnet.io/podnet/cniplugin"
)

// nodePaths are the files and folders of one node inside the cluster folder.
type nodePaths struct {
	Dir         string // the node's folder
	CRISocket   string
	CRIConfig   string
	CRIDir      string // the runtime's own folders (RuntimePaths.Dir)
	RuncRoot    string
	NRISocket   string // the runtime's NRI socket
	CNIConfDir  string
	CNIDataDir  string
	KubeletRoot string
	KubeletConf string
	KubeletKube string // kubelet kubeconfig
	PodLogsDir  string
	ProxyConf   string
	ProxyKube   string // kube-proxy kubeconfig
	ResolvConf  string
	ServingCert string
	ServingKey  string
	ClientCert  string
	ClientKey   string
}

// NodeCRISocket is a node's CRI socket, relative to its folder, on every
// runtime (CRI-O too): the name every release's hack/deploy.sh points
// the agent at, so that the upgrade test deploys the previous release on
// this layout.
const NodeCRISocket = "containerd.sock"

// nodeRuntimeDir is a node's runtime folder (RuntimePaths.Dir), relative
// to its folder.
const nodeRuntimeDir = "runtime"

// NodeKubeletDir is a node's kubelet root directory (--root-dir),
// relative to the node's folder; a kubelet plugin (DRA) registers in its
// plugins_registry.
const NodeKubeletDir = "kubelet"

func pathsOf(clusterDir string, n nodeLayout) nodePaths {
	d := filepath.Join(clusterDir, n.Dir)
	pki := filepath.Join(clusterDir, "pki")
	return nodePaths{
		Dir:         d,
		CRISocket:   filepath.Join(d, NodeCRISocket),
		CRIConfig:   filepath.Join(d, "runtime.toml"),
		CRIDir:      filepath.Join(d, nodeRuntimeDir),
		RuncRoot:    filepath.Join(d, "runc"),
		NRISocket:   filepath.Join(d, NodeNRISocket),
		CNIConfDir:  filepath.Join(d, "cni", "net.d"),
		CNIDataDir:  filepath.Join(d, "cni", "ipam"),
		KubeletRoot: filepath.Join(d, NodeKubeletDir),
		KubeletConf: filepath.Join(d, "kubelet.yaml"),
		KubeletKube: filepath.Join(d, "kubelet.kubeconfig"),
		PodLogsDir:  filepath.Join(d, "pod-logs"),
		ProxyConf:   filepath.Join(d, "kube-proxy.yaml"),
		ProxyKube:   filepath.Join(d, "kube-proxy.kubeconfig"),
		ResolvConf:  filepath.Join(d, "resolv.conf"),
		ServingCert: filepath.Join(pki, n.Dir+"-kubelet-serving.crt"),
		ServingKey:  filepath.Join(pki, n.Dir+"-kubelet-serving.key"),
		ClientCert:  filepath.Join(pki, n.Dir+"-kubelet-client.crt"),
		ClientKey:   filepath.Join(pki, n.Dir+"-kubelet-client.key"),
	}
}

// RuntimePaths are where one containerd keeps everything it writes, so
// several can run on one machine and each can be torn down on its own.
type RuntimePaths struct {
	Dir        string // root, state and opt folders go under it
	Socket     string
	RuncRoot   string // runc's own state, apart from every other containerd
	CNIConfDir string
	// CNIBinDir is containerd's one CNI plugin folder; empty means the
	// machine's SystemCNIBinDir. A folder of its own (LinkCNIPlugins) can
	// add a plugin without writing into the machine's.
	CNIBinDir string
	// NRISocket is where containerd 2 serves NRI plugins; empty means
	// NodeNRISocket in Dir. containerd 1.6 has no NRI.
	NRISocket string
	// NRIDefaultValidator: see Options.NRIDefaultValidator.
	NRIDefaultValidator bool
	// NRITolerateAnnotation: see Options.NRITolerateAnnotation.
	NRITolerateAnnotation string
	// NRIRejectOCIHooks, with NRIDefaultValidator, has the validator
	// reject every OCI hook a plugin adds (reject_oci_hook_adjustment), as
	// an admin may set it.
	NRIRejectOCIHooks bool
	// StorageDir is CRI-O's image and container storage root; empty
	// means a folder in Dir. A local cluster keeps it out of the cluster
	// folder (StorageDirOf): CRI-O forces host-to-container propagation
	// on every hostPath volume that holds its storage root, and refuses
	// it where the host path is not on a shared or slave mount, which the
	// agent's volume of the cluster folder is not.
	StorageDir string
}

// StorageDirOf is where a local cluster's node keeps its runtime storage
// outside the cluster folder (RuntimePaths.StorageDir).
func StorageDirOf(root, cluster, node string) string {
	return filepath.Join(storageDirOf(root, cluster), node)
}

// storageDirOf holds the StorageDirOf of every node of a cluster.
func storageDirOf(root, cluster string) string {
	return filepath.Join(root, "_output", "runtime-storage", cluster)
}

// SystemCNIBinDir is where Debian's containernetworking-plugins are.
const SystemCNIBinDir = "/usr/lib/cni"

func (p RuntimePaths) cniBinDir() string {
	if p.CNIBinDir == "" {
		return SystemCNIBinDir
	}
	return p.CNIBinDir
}

// ContainerdConfig is the CRI configuration of a containerd that runs pods
// here (the local cluster's nodes and the CRI tests).
// restrict_oom_score_adj is mandatory on these machines (lowering
// oom_score_adj is not permitted); snapshotter comes from
// ChooseSnapshotter and must be the one images are imported with; the
// sandbox image is imported, never pulled.
func ContainerdConfig(p RuntimePaths, sandboxImage, snapshotter string) string {
	return fmt.Sprintf(`version = 2
root = %q
state = %q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %q

[plugins."io.containerd.internal.v1.opt"]
  path = %q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = %q
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
    max_conf_num = 1
`, filepath.Join(p.Dir, "root"), filepath.Join(p.Dir, "state"), p.Socket, filepath.Join(p.Dir, "opt"),
		sandboxImage, snapshotter, p.RuncRoot, p.cniBinDir(), p.CNIConfDir)
}

// CNIBinDirName is the cluster's own CNI bin folder, under its Dir, when
// it attaches at sandbox setup or runs with OwnCNIBinDir.
const CNIBinDirName = "cni-bin"

// internalKubeconfig is Cluster.InternalKubeconfig's file in its Dir.
const internalKubeconfig = "admin-internal.kubeconfig"

// NodeCNISocket is where, relative to a node's folder (<cluster Dir>/<node
// Name>), the node's agent serves the chained plugin.
const NodeCNISocket = "podnet/cni.sock"

// renderCNIConfig is the primary pod network of one node: a bridge whose
// address is the pods' gateway. ipMasq is off because pods reach other
// nodes by plain routes between the node namespaces. A podnetSocket
// chains podnet's plugin after the bridge, asking for the pod annotations.
func renderCNIConfig(n nodeLayout, p nodePaths, podnetSocket string) (string, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       n.CNIName,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      n.Bridge,
				"isGateway":   true,
				"ipMasq":      false,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"dataDir": p.CNIDataDir,
					"ranges":  [][]map[string]string{{{"subnet": n.PodCIDR.String(), "gateway": n.Gateway.String()}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
				},
			},
		},
	}
	if podnetSocket != "" {
		conf["plugins"] = append(conf["plugins"].([]any), map[string]any{
			"type":         cniplugin.Type,
			"socket":       podnetSocket,
			"capabilities": map[string]bool{cniplugin.PodAnnotationsCapability: true},
		})
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode CNI config of node %q: %w", n.Name, err)
	}
	return string(b) + "\n", nil
}

// renderKubeletConfig carries the settings kubelet 1.35 needs on these
// machines (cgroup v1, cgroupfs, no node allocatable enforcement, swap
// allowed) and keeps every path in the node folder. Pods get QoS cgroups
// as on a kubeadm node, under the node's own cgroup root: without them
// every sandbox being set up would weigh as much as the whole of
// kubepods, and a node agent with a CPU request would get less of the
// node the more pods start at once.
func renderKubeletConfig(n nodeLayout, p nodePaths, caFile string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: %s
enforceNodeAllocatable: []
failSwapOn: false
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
containerRuntimeEndpoint: unix://%s
imageServiceEndpoint: unix://%s
podLogsDir: %s
resolvConf: %s
tlsCertFile: %s
tlsPrivateKeyFile: %s
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %s}
authorization:
  mode: AlwaysAllow
clusterDomain: cluster.local
# Images are imported, never pulled, so they must never be collected.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "1Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
podPidsLimit: -1
registerNode: true
`, cgroupRootOf(n.Name), n.IP, kubeletPort, p.CRISocket, p.CRISocket, p.PodLogsDir, p.ResolvConf, p.ServingCert, p.ServingKey, caFile)
}

// renderKubeProxyConfig keeps kube-proxy away from machine-wide settings:
// conntrack sizes of 0 leave nf_conntrack_max alone, and localhost node
// ports off means it need not set route_localnet.
func renderKubeProxyConfig(n nodeLayout, p nodePaths, l layout) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
hostnameOverride: %s
clusterCIDR: %s
bindAddress: %s
nodePortAddresses: [primary]
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
clientConnection:
  kubeconfig: %s
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  udpTimeout: 0s
  udpStreamTimeout: 0s
iptables:
  localhostNodePorts: false
  masqueradeAll: false
`, n.Name, l.ClusterCIDR, n.IP, p.ProxyKube)
}

// writeKubeconfig writes a kubeconfig with client certificate auth.
func writeKubeconfig(path, server, caFile, certFile, keyFile, user string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %q: %w", path, err)
	}
	return nil
}

// flags turns a map into sorted --key=value arguments, so command lines
// are stable and readable in ps and logs.
func flags(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, "--"+k+"="+m[k])
	}
	return out
}
