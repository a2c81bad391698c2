package burst

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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
}

// arms are the Deployments of one mode, podnet's pods held as kind, in
// the order each N runs them: without networks, then podnet and Multus
// with one network, then with two; in NRI mode, whose figures are set
// against targets, last the control arm without networks again. The
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
	return vs
}

// setAgainst says whether v's figures are set against the arm without
// networks: every arm's but that one's own.
func (v variant) setAgainst() bool { return v.kind != noNetworks || v.control }

// armsEnv names the arms to run, comma-separated; unset runs all.
// without_networks always runs: every ratio is set against it.
const armsEnv = "PODNET_BURST_ARMS"

func burstArms(env string, kind startKind) ([]variant, error) {
	all := arms(kind)
	if env == "" {
		return all, nil
	}
	want := map[string]bool{"without_networks": true}
	for _, f := range strings.Split(env, ",") {
		name := strings.TrimSpace(f)
		if !slices.ContainsFunc(all, func(v variant) bool { return v.name == name }) {
			return nil, fmt.Errorf("%s %q: arm %q unknown: want a comma-separated list of %s", armsEnv, env, name, armNames(all))
		}
		want[name] = true
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
