package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/pkg/netpolicy"
)

// The policy truth table: pods in three namespaces on two networks of one
// profile, one network open to tenants' MultiNetworkPolicies alone and
// one under a floor that lets in only pods of namespaces sharing the
// podnet.io/group label. Both networks span the nodes over VXLAN, and
// pol-b's pod runs on the second node: its node's agent enforces what
// the controller wrote for that node. Each case probes every ordered pair of pods on
// TCP 80, TCP 81, UDP 53 and ICMP echo, over IPv4 and IPv6, and compares
// each cell with the table written from NetworkPolicy's semantics.

const polProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-pol}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: pol}
  networks:
  - name: pol
    bridge: {name: pnbr-pol, vxlan: {vni: 4284}}
    ipam: {pools: ["192.168.84.0/24", "fd00:84::/64"]}
  - name: floored
    bridge: {name: pnbr-polf, vxlan: {vni: 4285}}
    ipam: {pools: ["192.168.85.0/24", "fd00:85::/64"]}
    policyFloor:
      ingress: {sameLabel: podnet.io/group}
  - name: spoofable
    bridge: {name: pnbr-pols, vxlan: {vni: 4286}}
    portSecurity: {disabled: true}
    ipam: {pools: ["192.168.86.0/24", "fd00:86::/64"]}
    policyFloor:
      ingress: {sameLabel: podnet.io/group}
`

// polTenant is the user the policies are written as: it holds the
// built-in edit role in each namespace of the test, which podnet's
// install extends to MultiNetworkPolicies.
const polTenant = "pol-tenant"

var asPolTenant = []string{"--as=" + polTenant, "--as-group=system:authenticated"}

// polNamespaces are the namespaces and their group: pol-a and pol-b are
// one tenant's, pol-c another's.
var polNamespaces = []struct{ name, group string }{{"pol-a", "g1"}, {"pol-b", "g1"}, {"pol-c", "g2"}}

// polPods are the pods, by namespace/name, with their app label.
var polPods = []struct{ ns, name, app, node string }{
	{"pol-a", "web", "web", node1}, {"pol-a", "db", "db", node1}, {"pol-b", "client", "client", node2}, {"pol-c", "other", "client", node1},
}

// probe is one kind of traffic a cell is made of.
type probe struct {
	proto string // tcp, udp, icmp
	port  int
}

var polProbes = []probe{{"tcp", 80}, {"tcp", 81}, {"udp", 53}, {"icmp", 0}}

// polEndpoint is a pod as the probes see it: its netns and its
// addresses on each network.
type polEndpoint struct {
	key   string // namespace/name
	netns string
	addrs map[string][]net.IP // interface -> IPv4, IPv6
	// heard are the datagrams the pod's sink (UDP 5354) received.
	mu    sync.Mutex
	heard map[string]bool
}

// sinkPort is where a pod takes datagrams it only records.
const sinkPort = 5354

// cell names one probe of one ordered pair on one family.
type cell struct {
	from, to string
	probe    probe
	v6       bool
}

func (c cell) String() string {
	fam := "v4"
	if c.v6 {
		fam = "v6"
	}
	return fmt.Sprintf("%s -> %s %s/%d %s", c.from, c.to, c.probe.proto, c.probe.port, fam)
}

// allowFunc is a case's expected table: whether a cell passes.
type allowFunc func(c cell) bool

func (s *suite) testPolicy(t *testing.T) {
	ctx := context.Background()
	s.apply(t, polProfile)
	for _, ns := range polNamespaces {
		s.kubectl(t, "", "create", "namespace", ns.name)
		s.kubectl(t, "", "label", "namespace", ns.name, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=pol", "podnet.io/group="+ns.group)
		s.waitWebhookOffers(t, ns.name, "pol", "192.168.84.0/24")
		s.waitWebhookOffers(t, ns.name, "floored", "192.168.85.0/24")
		s.waitWebhookOffers(t, ns.name, "spoofable", "192.168.86.0/24")
		s.kubectl(t, "", "-n", ns.name, "create", "rolebinding", "tenant-edit", "--clusterrole=edit", "--user="+polTenant)
	}
	for _, p := range polPods {
		pod := attackPod(p.name, p.ns, map[string]string{podnetv1.NetworksAnnotation: "pol, floored, spoofable"})
		pod.Labels = map[string]string{"app": p.app}
		pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": p.node}
		if err := s.client.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	eps := map[string]*polEndpoint{}
	for _, p := range polPods {
		s.waitNet1(t, p.ns, p.name, true, 3*time.Minute)
		eps[p.ns+"/"+p.name] = s.polEndpoint(t, p.ns, p.name)
	}
	// The table that enforces policy lives in the pod's netns: the pod
	// must not be able to change it.
	if caps := s.capabilities(t, "pol-a", "web"); caps&(1<<capNetAdmin) != 0 {
		t.Fatalf("a pod on a policed network has NET_ADMIN (CapEff %x)", caps)
	}
	stop := servePolicyProbes(t, eps)
	defer stop()
	plugin := t.TempDir()
	if err := image.BuildGoBinary(ctx, s.in.Root, "./cmd/kubectl-podnet", filepath.Join(plugin, "kubectl-podnet")); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, ns := range polNamespaces {
			s.kubectl(t, "", "delete", "namespace", ns.name, "--wait=false")
		}
		s.kubectl(t, "", "delete", "networkprofile", "e2e-pol")
	}()

	everything := func(cell) bool { return true }
	webPort80 := func(c cell) bool { return c.probe == probe{"tcp", 80} }
	sameGroup := func(c cell) bool { return groupOf(c.from) == groupOf(c.to) }

	// Each step adds policies (kubectl apply) and names the expected
	// table of each network; the policies stay for the steps after it
	// unless a step deletes them.
	t.Run("SpoofedSourceStoppedByPortSecurity", func(t *testing.T) { testSpoofedSource(t, eps) })
	// checkTable waits until every cell of both networks' tables is as
	// expected, then asks the plugin each question and checks its answer.
	checkTable := func(t *testing.T, pol, floored allowFunc, explain [][2]string) {
		t.Helper()
		want := map[string]allowFunc{"net1": pol, "net2": floored}
		var wrong []string
		eventually(t, time.Minute, "every cell of the table", func(context.Context) error {
			wrong = probeTable(eps, want)
			if len(wrong) > 0 {
				return fmt.Errorf("%d cells differ:\n%s", len(wrong), strings.Join(wrong, "\n"))
			}
			return nil
		})
		for _, e := range explain {
			out, code := s.podnet(t, plugin, strings.Fields(e[0])...)
			// policy, and can-i asked about traffic, exit 0 allowed, 1 denied.
			asks := strings.Contains(e[0], " policy ") || strings.Contains(e[0], " can-i ")
			allowed := strings.Contains(e[1], "allowed by") || !asks
			if !strings.Contains(out, e[1]) || (code == 0) != allowed {
				t.Errorf("kubectl podnet %s (exit %d) does not say %q:\n%s", e[0], code, e[1], out)
			}
		}
	}
	for _, step := range []struct {
		name         string
		apply        string
		remove       []string // namespace/name of policies to delete first
		pol, floored allowFunc
		// explain are kubectl podnet's arguments (policy, can-i about
		// traffic, or explain) and what its answer must say, once the
		// table holds.
		explain [][2]string
	}{
		{"NoPolicyAllowsAll", "", nil, everything, sameGroup, nil},
		{"DenyAllIngressInOneNamespace", mnp("pol-a", "deny-in", "pol", `
  podSelector: {}
  policyTypes: [Ingress]`), nil,
			func(c cell) bool { return nsOf(c.to) != "pol-a" }, sameGroup, nil},
		{"AllowWebFromGroupOnTCP80", mnp("pol-a", "web-80", "pol", `
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {podnet.io/group: g1}}
    ports:
    - {protocol: TCP, port: 80}`), nil,
			func(c cell) bool {
				switch {
				case c.to == "pol-a/web":
					return groupOf(c.from) == "g1" && webPort80(c)
				case nsOf(c.to) == "pol-a":
					return false
				}
				return true
			}, sameGroup, [][2]string{
				{"-n pol-a policy web --network pol --from pol-b/client --port tcp/80", "allowed by pol-a/web-80"},
				{"-n pol-a policy web --network pol --from pol-c/other --port tcp/80", "isolated by pol-a/deny-in, pol-a/web-80"},
				{"-n pol-a can-i web --network pol --from pol-b/client --port tcp/80", "allowed by pol-a/web-80"},
				{"-n pol-a can-i web --network pol --from pol-c/other --port tcp/80", "isolated by pol-a/deny-in, pol-a/web-80"},
				{"-n pol-a policy web --network floored --from pol-c/other --port icmp", "isolated by policyFloor"},
				{"-n pol-a explain web", "isolated by pol-a/deny-in, pol-a/web-80"},
			}},
		{"EgressOnlyToWebOnUDP53", mnp("pol-c", "out-dns", "pol", `
  podSelector: {}
  policyTypes: [Egress]
  egress:
  - to:
    - namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: pol-a}}
      podSelector: {matchLabels: {app: web}}
    ports:
    - {protocol: UDP, port: 53}`), []string{"pol-a/deny-in", "pol-a/web-80"},
			func(c cell) bool {
				if nsOf(c.from) == "pol-c" {
					return c.to == "pol-a/web" && c.probe == probe{"udp", 53}
				}
				return true
			}, sameGroup, nil},
		// A tenant opens its pods to everyone on the floored network: the
		// floor still lets in only its own group.
		{"TenantPolicyCannotOpenTheFloor", mnp("pol-c", "open-all", "floored", `
  podSelector: {}
  policyTypes: [Ingress]
  ingress:
  - {}`), []string{"pol-c/out-dns"}, everything, sameGroup, [][2]string{
			{"-n pol-c policy other --network floored --from pol-a/web --port tcp/80", "isolated by pol-c/open-all, policyFloor"},
		}},
		// A policy in pol-c whose selector matches pol-a's web pod by
		// its labels isolates pol-c's pods only: a policy selects pods of
		// its own namespace.
		{"PolicyCannotSelectAnotherNamespacesPods", mnp("pol-c", "deny-web", "pol", `
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress, Egress]`), []string{"pol-c/open-all"}, everything, sameGroup, nil},
		// A tenant's policy narrows the floor: pol-b's client takes
		// nothing in on the floored network, not even from its group.
		{"TenantPolicyNarrowsTheFloor", mnp("pol-b", "deny-floored", "floored", `
  podSelector: {}
  policyTypes: [Ingress]`), []string{"pol-c/deny-web"}, everything,
			func(c cell) bool { return sameGroup(c) && nsOf(c.to) != "pol-b" }, nil},
	} {
		t.Run(step.name, func(t *testing.T) {
			for _, r := range step.remove {
				ns, name, _ := strings.Cut(r, "/")
				s.kubectl(t, "", append(asPolTenant, "-n", ns, "delete", "multinetworkpolicy", name)...)
			}
			if step.apply != "" {
				s.kubectl(t, step.apply, append(asPolTenant, "apply", "-f", "-")...)
			}
			checkTable(t, step.pol, step.floored, step.explain)
		})
	}
	// The tenant who writes the policies cannot read, write or delete
	// the NodePolicies they become.
	t.Run("TenantCannotTouchNodePolicies", func(t *testing.T) {
		forged := fmt.Sprintf(`{"apiVersion": "podnet.io/v1alpha1", "kind": "NodePolicy", "metadata": {"name": %q}, "spec": {}}`, node1)
		for _, try := range []struct {
			stdin string
			args  []string
		}{
			{"", []string{"get", "nodepolicy", node1}},
			{"", []string{"patch", "nodepolicy", node1, "--type=merge", "-p", `{"spec": {"interfaces": []}}`}},
			{"", []string{"delete", "nodepolicy", node1}},
			{forged, []string{"apply", "-f", "-"}},
		} {
			_, err := s.kubectlErr(try.stdin, append(asPolTenant, try.args...)...)
			if err == nil || !strings.Contains(err.Error(), "Forbidden") && !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("kubectl %s as the tenant: %v, want Forbidden", strings.Join(try.args, " "), err)
			}
		}
	})
	t.Run("SameNetworkNameOnAnotherBridge", func(t *testing.T) {
		s.testSameNetworkNameOnAnotherBridge(t, eps, func(t *testing.T, explain [][2]string) {
			checkTable(t, everything, func(c cell) bool { return sameGroup(c) && nsOf(c.to) != "pol-b" }, explain)
		})
	})
}

// polTwinProfile offers namespaces of tenant pold a network also named
// floored, on a bridge of its own (node-local) with floored's pools, where
// tenants may choose their addresses.
const polTwinProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-pol-twin}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: pold}
  networks:
  - name: floored
    bridge: {name: pnbr-poltw}
    ipam: {pools: ["192.168.85.0/24", "fd00:85::/64"], allowStatic: true}
    policyFloor:
      ingress: {sameLabel: podnet.io/group}
`

// testSameNetworkNameOnAnotherBridge: another profile offers pol-d, a
// namespace of pol-c's group g2, a network also named floored on another
// bridge with the same pools, and pol-d's pod there takes pol-a's web's
// addresses. Counted as a peer of g2's floor on this bridge, it would let
// web (g1) in to pol-c's other; it must count on its own bridge only. And
// pol-d's policy for "floored", which names the network as pol-d has it,
// isolates pol-d's pods only. checkTable checks the table the steps
// before left and asks the plugin.
func (s *suite) testSameNetworkNameOnAnotherBridge(t *testing.T, eps map[string]*polEndpoint, checkTable func(*testing.T, [][2]string)) {
	ctx := context.Background()
	web := eps["pol-a/web"].addrs["net2"]
	s.apply(t, polTwinProfile)
	s.kubectl(t, "", "create", "namespace", "pol-d")
	defer func() {
		s.kubectl(t, "", "delete", "namespace", "pol-d", "--wait=false")
		s.kubectl(t, "", "delete", "networkprofile", "e2e-pol-twin")
	}()
	s.kubectl(t, "", "label", "namespace", "pol-d", podnetv1.EnabledLabel+"=true", "podnet.io/tenant=pold", "podnet.io/group=g2")
	s.kubectl(t, "", "-n", "pol-d", "create", "rolebinding", "tenant-edit", "--clusterrole=edit", "--user="+polTenant)
	s.waitWebhookOffers(t, "pol-d", "floored", "192.168.85.0/24")
	s.kubectl(t, mnp("pol-d", "deny-all", "floored", `
  podSelector: {}
  policyTypes: [Ingress, Egress]`), append(asPolTenant, "apply", "-f", "-")...)
	twin := attackPod("twin", "pol-d", map[string]string{podnetv1.NetworksAnnotation: fmt.Sprintf(`[{"name": "floored", "ips": ["%s/24", "%s/64"]}]`, web[0], web[1])})
	if err := s.client.Create(ctx, twin); err != nil {
		t.Fatal(err)
	}
	twin = s.waitNet1(t, "pol-d", "twin", true, 3*time.Minute)
	other := s.getPod(t, "pol-c", "other")
	// Once node1's NodePolicy holds the twin's interface, the controller
	// has judged the network with it: other's ingress must not name web.
	eventually(t, time.Minute, "the twin's interface in node1's NodePolicy", func(ctx context.Context) error {
		var np podnetv1.NodePolicy
		if err := s.client.Get(ctx, client.ObjectKey{Name: node1}, &np); err != nil {
			return err
		}
		ports, err := netpolicy.ReadNodeSpec(np.Spec)
		if err != nil {
			return err
		}
		if _, ok := ports[netpolicy.InterfaceKey{PodUID: string(twin.UID), Interface: "net1"}]; !ok {
			return fmt.Errorf("no entry for %s net1", twin.UID)
		}
		in, ok := ports[netpolicy.InterfaceKey{PodUID: string(other.UID), Interface: "net2"}]
		if !ok {
			return fmt.Errorf("no entry for pol-c/other net2")
		}
		for _, a := range in.In.Allow {
			for _, ip := range web {
				if addr, _ := netip.AddrFromSlice(ip); a.Peer.Contains(addr.Unmap()) {
					t.Fatalf("pol-c/other's floored ingress lets in %s, web's address, because the other bridge's twin holds it: %+v", ip, in.In)
				}
			}
		}
		return nil
	})
	checkTable(t, [][2]string{
		{"-n pol-c policy other --network floored --from pol-a/web --port tcp/80", "isolated by policyFloor"},
	})
}

// testSpoofedSource: pol-c's pod, which the floor keeps from pol-a's web,
// sends datagrams to web with the source address of pol-a's db, which
// the floor lets in. On the floored network port security drops them at
// other's bridge port; on the network whose admin turned port security
// off they reach web, whose filter cannot tell them from db's: the
// attack is real, and port security is what stops it.
func testSpoofedSource(t *testing.T, eps map[string]*polEndpoint) {
	other, web, db := eps["pol-c/other"], eps["pol-a/web"], eps["pol-a/db"]
	for _, tc := range []struct {
		iface   string
		arrives bool
	}{{"net2", false}, {"net3", true}} {
		payload := "spoofed-" + tc.iface
		heard := func() bool {
			web.mu.Lock()
			defer web.mu.Unlock()
			return web.heard[payload]
		}
		deadline := time.Now().Add(10 * time.Second)
		for !heard() && time.Now().Before(deadline) {
			if err := sendSpoofed(other.netns, db.addrs[tc.iface][0], web.addrs[tc.iface][0], sinkPort, payload); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if got := heard(); got != tc.arrives {
			t.Errorf("a datagram from pol-c/other posing as pol-a/db reached pol-a/web on %s: %v, want %v", tc.iface, got, tc.arrives)
		}
	}
}

// sendSpoofed sends one UDP datagram from the named netns with the
// given source address, through a raw socket (the pod's own NET_RAW is
// not needed: the test is root in its netns).
func sendSpoofed(netnsName string, src, dst net.IP, port int, payload string) error {
	return inNetNS(netnsName, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_RAW)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		udp := make([]byte, 8+len(payload))
		binary.BigEndian.PutUint16(udp[0:], 40000)
		binary.BigEndian.PutUint16(udp[2:], uint16(port))
		binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
		copy(udp[8:], payload) // checksum 0: none, as IPv4 allows
		ip := make([]byte, 20, 20+len(udp))
		ip[0], ip[8], ip[9] = 0x45, 64, unix.IPPROTO_UDP
		binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
		copy(ip[12:16], src.To4())
		copy(ip[16:20], dst.To4())
		var sa unix.SockaddrInet4
		copy(sa.Addr[:], dst.To4())
		return unix.Sendto(fd, append(ip, udp...), 0, &sa)
	})
}

// mnp is a MultiNetworkPolicy for one network with the given spec body.
func mnp(ns, name, network, spec string) string {
	return fmt.Sprintf(`apiVersion: k8s.cni.cncf.io/v1beta1
kind: MultiNetworkPolicy
metadata:
  namespace: %s
  name: %s
  annotations: {k8s.v1.cni.cncf.io/policy-for: %s}
spec:%s
`, ns, name, network, spec)
}

func nsOf(key string) string { ns, _, _ := strings.Cut(key, "/"); return ns }

func groupOf(key string) string {
	for _, ns := range polNamespaces {
		if ns.name == nsOf(key) {
			return ns.group
		}
	}
	return ""
}

// polEndpoint finds a pod's netns (by its net1 MAC) and addresses.
func (s *suite) polEndpoint(t *testing.T, ns, name string) *polEndpoint {
	t.Helper()
	var st []struct {
		Interface string   `json:"interface"`
		MAC       string   `json:"mac"`
		IPs       []string `json:"ips"`
	}
	ep := &polEndpoint{key: ns + "/" + name}
	eventually(t, time.Minute, "network status of "+ep.key, func(ctx context.Context) error {
		p := s.getPod(t, ns, name)
		if err := json.Unmarshal([]byte(p.Annotations[podnetv1.NetworkStatusAnnotation]), &st); err != nil {
			return err
		}
		ep.addrs = map[string][]net.IP{}
		for _, e := range st {
			if !slices.Contains([]string{"net1", "net2", "net3"}, e.Interface) {
				continue
			}
			var v4, v6 net.IP
			for _, ip := range e.IPs {
				a := net.ParseIP(strings.Split(ip, "/")[0])
				if a.To4() != nil {
					v4 = a.To4()
				} else if a != nil {
					v6 = a
				}
			}
			if v4 != nil && v6 != nil {
				ep.addrs[e.Interface] = []net.IP{v4, v6}
			}
			if e.Interface == "net1" && ep.netns == "" {
				ep.netns = podNetNSByMAC(t, e.MAC)
			}
		}
		if len(ep.addrs) != 3 {
			return fmt.Errorf("status %s", p.Annotations[podnetv1.NetworkStatusAnnotation])
		}
		return nil
	})
	return ep
}

// inNetNS runs f on a thread in the named netns: sockets it opens live
// there, as the pod's own would.
func inNetNS(name string, f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	h, err := netns.GetFromName(name)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		return err
	}
	defer netns.Set(orig) //nolint:errcheck // the thread is dropped if this fails
	return f()
}

// servePolicyProbes opens, in each pod's netns, TCP listeners on 80 and
// 81 and a UDP echo on 53 (both families), and serves them until stop.
func servePolicyProbes(t *testing.T, eps map[string]*polEndpoint) (stop func()) {
	t.Helper()
	var closers []func()
	for _, ep := range eps {
		err := inNetNS(ep.netns, func() error {
			for _, port := range []int{80, 81} {
				l, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
				if err != nil {
					return err
				}
				closers = append(closers, func() { l.Close() })
				go func() {
					for {
						c, err := l.Accept()
						if err != nil {
							return
						}
						c.Close()
					}
				}()
			}
			sink, err := net.ListenPacket("udp", fmt.Sprintf(":%d", sinkPort))
			if err != nil {
				return err
			}
			closers = append(closers, func() { sink.Close() })
			go func() {
				buf := make([]byte, 64)
				for {
					n, _, err := sink.ReadFrom(buf)
					if err != nil {
						return
					}
					ep.mu.Lock()
					if ep.heard == nil {
						ep.heard = map[string]bool{}
					}
					ep.heard[string(buf[:n])] = true
					ep.mu.Unlock()
				}
			}()
			u, err := net.ListenPacket("udp", ":53")
			if err != nil {
				return err
			}
			closers = append(closers, func() { u.Close() })
			go func() {
				buf := make([]byte, 64)
				for {
					n, from, err := u.ReadFrom(buf)
					if err != nil {
						return
					}
					u.WriteTo(buf[:n], from) //nolint:errcheck // a lost echo is a failed probe
				}
			}()
			return nil
		})
		if err != nil {
			t.Fatalf("probe servers in %s (%s): %v", ep.key, ep.netns, err)
		}
	}
	return func() {
		for _, c := range closers {
			c()
		}
	}
}

// probeTable probes every cell of both networks at once and returns the
// cells whose outcome differs from want, sorted.
func probeTable(eps map[string]*polEndpoint, want map[string]allowFunc) []string {
	var (
		mu    sync.Mutex
		wrong []string
		wg    sync.WaitGroup
	)
	for iface, allowed := range want {
		for _, from := range eps {
			for _, to := range eps {
				if from == to {
					continue
				}
				for _, pr := range polProbes {
					for i, dst := range to.addrs[iface] {
						c := cell{from: from.key, to: to.key, probe: pr, v6: i == 1}
						wg.Add(1)
						go func() {
							defer wg.Done()
							got := sendProbe(from.netns, dst, pr)
							if exp := allowed(c); got != exp {
								mu.Lock()
								wrong = append(wrong, fmt.Sprintf("%s on %s: passed %v, want %v", c, iface, got, exp))
								mu.Unlock()
							}
						}()
					}
				}
			}
		}
	}
	wg.Wait()
	slices.Sort(wrong)
	return wrong
}

// sendProbe says whether one probe from a netns to dst is answered.
func sendProbe(from string, dst net.IP, pr probe) bool {
	const wait = 2 * time.Second
	if pr.proto == "icmp" {
		return ping(from, dst, wait)
	}
	addr := net.JoinHostPort(dst.String(), fmt.Sprint(pr.port))
	ok := false
	err := inNetNS(from, func() error {
		c, err := net.DialTimeout(pr.proto, addr, wait)
		if err != nil {
			return err
		}
		defer c.Close()
		if pr.proto == "tcp" {
			ok = true
			return nil
		}
		c.SetDeadline(time.Now().Add(wait)) //nolint:errcheck // the read fails either way
		if _, err := c.Write([]byte("probe")); err != nil {
			return err
		}
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		ok = err == nil && string(buf[:n]) == "probe"
		return nil
	})
	return err == nil && ok
}

// pingID tells this process' echo requests apart: every probe of a
// table runs at once, and a raw socket sees every reply of its netns.
var pingID atomic.Uint32

// ping sends one ICMP echo request from the named netns to dst and says
// whether its reply came back within wait.
func ping(from string, dst net.IP, wait time.Duration) bool {
	network, proto, typ := "ip4:icmp", 1, icmp.Type(ipv4.ICMPTypeEcho)
	if dst.To4() == nil {
		network, proto, typ = "ip6:ipv6-icmp", 58, ipv6.ICMPTypeEchoRequest
	}
	id := int(pingID.Add(1) & 0xffff)
	ok := false
	err := inNetNS(from, func() error {
		c, err := icmp.ListenPacket(network, "")
		if err != nil {
			return err
		}
		defer c.Close()
		msg, err := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: 1, Data: []byte("podnet")}}).Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(msg, &net.IPAddr{IP: dst}); err != nil {
			return err
		}
		deadline := time.Now().Add(wait)
		buf := make([]byte, 1500)
		for {
			c.SetReadDeadline(deadline) //nolint:errcheck // the read fails either way
			n, peer, err := c.ReadFrom(buf)
			if err != nil {
				return nil
			}
			m, err := icmp.ParseMessage(proto, buf[:n])
			if err != nil || !peer.(*net.IPAddr).IP.Equal(dst) {
				continue
			}
			if echo, isEcho := m.Body.(*icmp.Echo); isEcho && echo.ID == id && (m.Type == ipv4.ICMPTypeEchoReply || m.Type == ipv6.ICMPTypeEchoReply) {
				ok = true
				return nil
			}
		}
	})
	return err == nil && ok
}
