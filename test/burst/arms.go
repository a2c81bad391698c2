package burst

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The arms' namespaces.
const (
	netNS    = "burst-net"    // opted in, granted both bench networks
	plainNS  = "burst-plain"  // not opted in: what a pod costs without podnet
	multusNS = "burst-multus" // not opted in: its pods ask Multus instead
)

// variant is one Deployment shape of the bench: an arm.
type variant struct {
	name      string // in the BENCH lines
	namespace string
	networks  string // the podnet.io/networks annotation; "" for none
	// multus is the k8s.v1.cni.cncf.io/networks annotation; "" for none.
	multus string
	// wait is the podnet.io/wait annotation; "" for none.
	wait string
	kind startKind
	// ifaces are the interfaces the app's first command must find.
	ifaces []string
	// vsMultus is the Multus arm with as many networks, whose all-Ready
	// time this podnet arm's is set against; "" for none.
	vsMultus string
	// control: an arm without networks again, set against the first as
	// a podnet arm is. Its ratio and delay are the bench's own noise:
	// what a round's drift and the arms' order alone make of the figures.
	control bool
	// pace, when set, adds the Deployment's pods one at a time, one per
	// pace, instead of all at once: on a node kept well below busy, an
	// app's start delay is podnet's work, not a queue for the CPUs.
	pace time.Duration
	// base is the arm without networks this arm is set against; "" for
	// without_networks.
	base string
}

// baseName is the arm v's figures are set against.
func (v variant) baseName() string {
	if v.base == "" {
		return "without_networks"
	}
	return v.base
}

// pace is the paced arms' interval: 2 pods a second. A pod of the burst
// costs the node's processes about 300–400 ms of CPU, so the node stays
// near a third busy on 2 CPUs (the arms print node_busy).
const pace = 500 * time.Millisecond

// arms are the Deployments of one mode, podnet's pods held as kind, in
// the order each N runs them: without networks, then podnet and Multus
// with one network, then with two; in NRI mode, whose figures are set
// against targets, the control arm without networks again; last the
// paced arms, without networks, with one podnet and with one Multus
// network. The
// Multus pods use the same image and command in a namespace of their
// own, with NetworkAttachmentDefinitions of the reference bridge plugin
// and host-local (multus_bench_test.go).
func arms(kind startKind) []variant {
	one, two := []string{"net1"}, []string{"net1", "net2"}
	vs := []variant{
		{name: "without_networks", namespace: plainNS, kind: noNetworks},
		{name: "1_network", namespace: netNS, networks: "b1", kind: kind, ifaces: one, vsMultus: "multus_1_network"},
		{name: "multus_1_network", namespace: multusNS, multus: "m1", kind: multusCNI, ifaces: one},
		{name: "2_networks", namespace: netNS, networks: "b1, b2", kind: kind, ifaces: two, vsMultus: "multus_2_networks"},
		{name: "multus_2_networks", namespace: multusNS, multus: "m1, m2", kind: multusCNI, ifaces: two},
	}
	if kind == nriSetup {
		vs = append(vs, variant{name: "without_networks_again", namespace: plainNS, kind: noNetworks, control: true})
	}
	return append(vs,
		variant{name: "without_networks_paced", namespace: plainNS, kind: noNetworks, pace: pace},
		variant{name: "1_network_paced", namespace: netNS, networks: "b1", kind: kind, ifaces: one, pace: pace, base: "without_networks_paced", vsMultus: "multus_1_network_paced"},
		variant{name: "multus_1_network_paced", namespace: multusNS, multus: "m1", kind: multusCNI, ifaces: one, pace: pace, base: "without_networks_paced"},
	)
}

// setAgainst says whether v's figures are set against the arm without
// networks: every arm's but that one's own.
func (v variant) setAgainst() bool { return v.kind != noNetworks || v.control }

// armsEnv names the arms to run, comma-separated; unset runs all.
// without_networks always runs, and the arm without networks a named arm
// is set against: every ratio is set against one.
const armsEnv = "PODNET_BURST_ARMS"

func burstArms(env string, kind startKind) ([]variant, error) {
	all := arms(kind)
	if env == "" {
		return all, nil
	}
	want := map[string]bool{"without_networks": true}
	for _, f := range strings.Split(env, ",") {
		name := strings.TrimSpace(f)
		i := slices.IndexFunc(all, func(v variant) bool { return v.name == name })
		if i < 0 {
			return nil, fmt.Errorf("%s %q: arm %q unknown: want a comma-separated list of %s", armsEnv, env, name, armNames(all))
		}
		want[name], want[all[i].baseName()] = true, true
	}
	return slices.DeleteFunc(all, func(v variant) bool { return !want[v.name] }), nil
}

func armNames(vs []variant) string {
	var out []string
	for _, v := range vs {
		out = append(out, v.name)
	}
	return strings.Join(out, ", ")
}

func burstSizes(env string) ([]int, error) {
	if env == "" {
		return []int{30, 100}, nil
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("PODNET_BURST_N %q: want comma-separated sizes between 1 and 100", env)
		}
		out = append(out, n)
	}
	return out, nil
}
