package localcluster

import (
	"fmt"
	"hash/fnv"
	"io"
	"net/netip"
	"regexp"
)

// Options say which cluster to bring up.
type Options struct {
	// Name is part of every netns, interface, folder and socket the cluster
	// owns: 1 to MaxNameLen characters of [a-z0-9-], starting with a letter.
	Name string
	// Nodes is 1 (control plane and node in one netns) or 2 (a second node
	// in its own netns, joined by a veth). 0 means 1.
	Nodes int
	// Root is the podnet repository root; binaries come from
	// Root/_output/k8s/bin and state goes to Root/_output/cluster/<Name>.
	Root string
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// AttachAtSandboxSetup chains podnet's CNI plugin after each node's
	// bridge, from a CNI bin folder of the cluster's own (CNIBinDir)
	// holding links to the machine's plugins, into which the agent's
	// install step copies the plugin; the machine's folder is never
	// written. podnet must then be deployed in that mode too
	// (hack/install does it for such a cluster).
	AttachAtSandboxSetup bool
	// OwnCNIBinDir runs every node's CNI plugins from a folder of the
	// cluster's own (Cluster.CNIBinDir) holding links to the machine's,
	// into which a test may add plugins (Multus, for the burst bench)
	// without writing the machine's folder. AttachAtSandboxSetup implies
	// it.
	OwnCNIBinDir bool
	// Runtime is each node's container runtime: RuntimeContainerd
	// (Debian's containerd 1.6, the default for ""), RuntimeContainerd2 or
	// RuntimeCRIO (both built from their Go modules when missing, NRI
	// on).
	Runtime string
	// NRIDefaultValidator turns on NRI's default validator in each node's
	// runtime (Containerd2Config, CRIOConfig): a container of a pod
	// annotated required-plugins.noderesource.dev is refused unless every
	// plugin the annotation names processed it. Only with a runtime that
	// serves NRI.
	NRIDefaultValidator bool
	// NRITolerateAnnotation, with NRIDefaultValidator, names the pod
	// annotation the validator reads to let a pod's containers run
	// without the plugins it requires (tolerate_missing_plugins_annotation):
	// what an admin may configure, and podnet's webhook must then refuse
	// on podnet pods (--nri-tolerate-annotations). Empty: none.
	NRITolerateAnnotation string
}

// MaxNameLen keeps the longest interface name ("cni-" + name) within the
// kernel's 15 characters.
const MaxNameLen = 11

// maxNodes is what the veth topology below supports.
const maxNodes = 2

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// validateOptions checks the options and fills defaults.
func validateOptions(o Options) (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if err := validateName(o.Name); err != nil {
		return o, err
	}
	if o.Nodes < 1 || o.Nodes > maxNodes {
		return o, fmt.Errorf("cluster %q: nodes %d out of range: must be 1..%d", o.Name, o.Nodes, maxNodes)
	}
	if o.Root == "" {
		return o, fmt.Errorf("cluster %q: root (the repository root) must be set", o.Name)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	rt, err := validateRuntime(o.Runtime)
	if err != nil {
		return o, fmt.Errorf("cluster %q: %w", o.Name, err)
	}
	o.Runtime = rt
	if o.NRITolerateAnnotation != "" && !o.NRIDefaultValidator {
		return o, fmt.Errorf("cluster %q: NRI tolerate annotation %q needs the NRI default validator", o.Name, o.NRITolerateAnnotation)
	}
	if o.NRIDefaultValidator && !ServesNRI(rt) {
		return o, fmt.Errorf("cluster %q: the NRI default validator needs a runtime that serves NRI: %q serves no NRI", o.Name, rt)
	}
	// Attaching at sandbox setup puts podnet's plugin into that folder.
	o.OwnCNIBinDir = o.OwnCNIBinDir || o.AttachAtSandboxSetup
	return o, nil
}

func validateName(name string) error {
	if len(name) == 0 || len(name) > MaxNameLen {
		return fmt.Errorf("cluster name %q: length %d out of range: must be 1..%d characters", name, len(name), MaxNameLen)
	}
	if !namePattern.MatchString(name) {
		return fmt.Errorf("cluster name %q: must match %s", name, namePattern)
	}
	return nil
}

// Well-known ports inside the cluster netns. They cannot collide with
// another cluster or the machine because every cluster has its own netns.
const (
	apiserverPort = 6443
	etcdPort      = 2379
	etcdPeerPort  = 2380
	kubeletPort   = 10250
)

// layout is every name and address of a cluster, derived from its name and
// its index (the second octet of all its addresses, unique among the
// clusters under one _output/cluster folder).
type layout struct {
	Name        string
	Index       int
	NetNS       string // name of the control plane / node 1 netns
	ClusterCIDR netip.Prefix
	ServiceCIDR netip.Prefix
	ServiceIP   netip.Addr // the kubernetes Service ClusterIP
	Nodes       []nodeLayout
	// HostIf is the port-less bridge in the cluster netns that carries
	// node 1's (and the API server's) address.
	HostIf string
	// LinkCIDR is the veth subnet between node netns.
	LinkCIDR netip.Prefix
}

type nodeLayout struct {
	Name    string // Kubernetes node name
	Dir     string // folder under the cluster folder: the node name
	NetNS   string // netns name
	IP      netip.Addr
	PodCIDR netip.Prefix
	Gateway netip.Addr // the CNI bridge address, first address of PodCIDR
	LinkIf  string     // this node's veth end ("" for a 1-node cluster's node 1)
	LinkIP  netip.Addr // address on LinkIf
	// DataIf is the node's data NIC ("" for a 1-node cluster): a veth
	// end without addresses, joined to the other node's data NIC.
	DataIf  string
	Bridge  string // CNI bridge name
	CNIName string // CNI network name
}

// indexRange bounds the second octet: 10.<index>.0.0/16 per cluster.
const (
	minIndex = 20
	maxIndex = 219
)

// preferredIndex is where the search for a free index starts, so a name
// keeps its addresses from one run to the next when nothing else is running.
func preferredIndex(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return minIndex + int(h.Sum32()%uint32(maxIndex-minIndex+1))
}

// pickIndex returns the first index at or after the preferred one that no
// other cluster uses.
func pickIndex(name string, used map[int]bool) (int, error) {
	start := preferredIndex(name)
	n := maxIndex - minIndex + 1
	for i := 0; i < n; i++ {
		idx := minIndex + (start-minIndex+i)%n
		if !used[idx] {
			return idx, nil
		}
	}
	return 0, fmt.Errorf("cluster %q: all %d address ranges 10.%d-%d.0.0/16 are in use", name, n, minIndex, maxIndex)
}

// planLayout derives names and addresses. Inside 10.<index>.0.0/16:
// pod CIDR of node i is 10.<index>.<i>.0/24, Services 10.<index>.128.0/20,
// the veth link 10.<index>.254.0/24 and node 1's address 10.<index>.255.1.
func planLayout(name string, index, nodes int) layout {
	octet := func(c, d byte) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(index), c, d}) }
	l := layout{
		Name:        name,
		Index:       index,
		NetNS:       "pn-" + name,
		ClusterCIDR: netip.PrefixFrom(octet(0, 0), 20),
		ServiceCIDR: netip.PrefixFrom(octet(128, 0), 20),
		ServiceIP:   octet(128, 1),
		HostIf:      "pn-" + name,
		LinkCIDR:    netip.PrefixFrom(octet(254, 0), 24),
	}
	for i := 0; i < nodes; i++ {
		nodeName := fmt.Sprintf("%s-n%d", name, i+1)
		n := nodeLayout{
			Name:    nodeName,
			Dir:     nodeName,
			NetNS:   l.NetNS,
			IP:      octet(255, 1),
			PodCIDR: netip.PrefixFrom(octet(byte(i), 0), 24),
			Gateway: octet(byte(i), 1),
			Bridge:  "cni-" + name,
			CNIName: "pn-" + name,
		}
		if nodes > 1 {
			n.LinkIf = fmt.Sprintf("n%d-%s", i+1, name)
			n.LinkIP = octet(254, byte(i+1))
			n.DataIf = DataNIC
		}
		if i > 0 {
			n.NetNS = fmt.Sprintf("%s-n%d", l.NetNS, i+1)
			n.IP = n.LinkIP
		}
		l.Nodes = append(l.Nodes, n)
	}
	return l
}

// DataNIC names each node's data NIC, the second link between the nodes
// (the first, LinkIf, is the underlay that carries node and pod traffic).
// It has no address and carries only what podnet puts on it: macvlan,
// ipvlan or VLAN interfaces with it as master, or a bridge's uplink port.
// Unlike every other interface it does not carry the cluster name: a
// NetworkProfile names one host interface for every node, as a real
// cluster's data NIC (eth1) has one name on every node, and it lives only
// inside the cluster's own netns, where no other cluster can collide.
const DataNIC = "data0"

// netnsPath is where `ip netns` and containerd keep named namespaces.
func netnsPath(name string) string { return "/var/run/netns/" + name }
