package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/portsecurity"
	"podnet.io/podnet/test/l2frame"
)

const portSecNS = "atk-ps"

// portSecProfile offers one bridge network with port security (the
// default), one with it off, one with it off whose pods take router
// advertisements, and two macvlan networks on the nodes' data NIC, with
// port security and without; all allow raw sockets, so that pods keep
// NET_RAW.
var portSecProfile = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-ps}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: ps}
  maxInterfaces: 5
  networks:
  - name: guarded
    bridge: {name: pnbr-psg}
    allowRawSockets: true
    ipam: {pools: ["192.168.62.0/24", "fd00:62::/64"]}
  - name: open
    bridge: {name: pnbr-pso}
    allowRawSockets: true
    portSecurity: {disabled: true}
    ipam: {pools: ["192.168.63.0/24", "fd00:63::/64"]}
  - name: slaac
    bridge: {name: pnbr-psr}
    allowRawSockets: true
    portSecurity: {disabled: true}
    acceptRouterAdvertisements: true
    ipam: {pools: ["192.168.64.0/24", "fd00:64::/64"]}
  - name: mvguarded
    macvlan: {master: %[1]s, mode: bridge}
    allowRawSockets: true
    ipam: {pools: ["192.168.65.0/24", "fd00:65::/64"]}
  - name: mvopen
    macvlan: {master: %[1]s, mode: bridge}
    allowRawSockets: true
    portSecurity: {disabled: true}
    ipam: {pools: ["192.168.66.0/24", "fd00:66::/64"]}
`, localcluster.DataNIC)

// testPortSecurity: a pod with NET_RAW on a network that allows raw
// sockets poses as another pod of the network (its MAC, IPv4 and IPv6
// source, gratuitous ARP, ARP reply and a neighbour advertisement
// overriding its IPv6 address) towards a third pod. On the guarded network
// none of it reaches the third pod, whose neighbour entries for the victim
// stay; on the network whose admin turned port security off, the same
// frames arrive and poison them, which shows the attack is real. Mallory
// also sends what only routers send: on the guarded network nothing
// arrives; on the open one the router advertisement arrives but the
// observer's link ignores it (accept_ra=0); on the network that takes
// router advertisements the observer takes mallory's prefix, the control.
// The same frames between macvlan links of one data NIC, which never cross
// a node bridge, are stopped at mallory's link's own egress.
func (s *suite) testPortSecurity(t *testing.T) {
	ctx := context.Background()
	explain := strings.Join(strings.Fields(s.kubectl(t, "", "explain", "networkprofiles.spec.networks.portSecurity")), " ")
	if !strings.Contains(explain, "Absent: port security is on") {
		t.Errorf("kubectl explain does not teach portSecurity's default:\n%s", explain)
	}
	s.apply(t, portSecProfile)
	s.kubectl(t, "", "create", "namespace", portSecNS)
	s.kubectl(t, "", "label", "namespace", portSecNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=ps")
	s.waitWebhookOffers(t, portSecNS, "guarded", "192.168.62.0/24")
	s.waitWebhookOffers(t, portSecNS, "open", "192.168.63.0/24")
	s.waitWebhookOffers(t, portSecNS, "slaac", "192.168.64.0/24")
	s.waitWebhookOffers(t, portSecNS, "mvopen", "192.168.66.0/24")
	names := []string{"mallory", "victim", "observer"}
	for _, name := range names {
		if err := s.client.Create(ctx, attackPod(name, portSecNS, map[string]string{podnetv1.NetworksAnnotation: "guarded, open, slaac, mvguarded, mvopen"})); err != nil {
			t.Fatal(err)
		}
	}
	hosts := map[string]map[string]l2frame.Host{}
	for _, name := range names {
		s.waitNet1(t, portSecNS, name, true, 3*time.Minute)
		hosts[name] = s.l2Hosts(t, name)
	}
	if caps := s.capabilities(t, portSecNS, "mallory"); caps&(1<<capNetRaw) == 0 {
		t.Fatalf("mallory lacks NET_RAW (CapEff %x): the attack would show nothing", caps)
	}
	tool := buildL2Spoof(t)
	for _, name := range []string{"mallory", "observer"} {
		s.kubectl(t, tool, "-n", portSecNS, "exec", "-i", name, "-c", "app", "--", "sh", "-c", "cat > /l2spoof && chmod 755 /l2spoof")
	}
	for _, tc := range []struct {
		iface   string
		guarded bool
		name    string
	}{
		{"net1", true, "Guarded"}, {"net2", false, "PortSecurityDisabled"}, {"net3", false, "AcceptRouterAdvertisements"},
		{"net4", true, "MacvlanGuarded"}, {"net5", false, "MacvlanPortSecurityDisabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mal, vic, obs := hosts["mallory"][tc.iface], hosts["victim"][tc.iface], hosts["observer"][tc.iface]
			for _, ip := range []net.IP{vic.IP4, vic.IP6} {
				s.podPing(t, "observer", ip)
			}
			seen := s.attack(t, tc.iface, mal, vic, obs)
			for _, c := range l2frame.Attack(mal, vic, obs) {
				want := c.Passes || !tc.guarded
				if !tc.guarded && c.Name == "icmpv6 redirect" && !strings.HasPrefix(tc.name, "Macvlan") {
					// The node's netfilter sees bridged IPv6 here, and
					// conntrack takes a redirect that opens no connection
					// for invalid: the node's own firewall drops it, port
					// security or not (TestRootPortSecurity shows the
					// port's rule on a bridge without it).
					continue
				}
				if got := slices.Contains(seen, c.Name); got != want {
					t.Errorf("%s on %s: reached the observer = %v, want %v", c.Name, tc.iface, got, want)
				}
			}
			owner := "victim"
			if !tc.guarded {
				owner = "mallory" // the control: the frames do poison
			}
			want := []string{hosts[owner][tc.iface].MAC.String()}
			if strings.HasPrefix(tc.name, "Macvlan") {
				// The pods' two macvlan links share one wire, and a pod
				// answers ARP for an address of either on both (Linux's
				// default arp_ignore): the entry may hold the owner's
				// other link's MAC, never the other pod's.
				for _, h := range []string{"net4", "net5"} {
					want = append(want, hosts[owner][h].MAC.String())
				}
			}
			for _, ip := range []net.IP{vic.IP4, vic.IP6} {
				if got := s.neighMAC(t, "observer", tc.iface, ip); !slices.Contains(want, got) {
					t.Errorf("observer's neighbour entry for victim's %s on %s = %q, want %s's (%v)", ip, tc.iface, got, owner, want)
				}
			}
			// A router advertisement moves the observer's link only where
			// the network takes them.
			tookPrefix := func() bool {
				return strings.Contains(s.kubectl(t, "", "-n", portSecNS, "exec", "observer", "-c", "app", "--", "ip", "-6", "addr", "show", "dev", tc.iface), "fd00:bad:")
			}
			if tc.iface == "net3" {
				eventually(t, 30*time.Second, "observer takes the prefix of mallory's router advertisement on net3", func(context.Context) error {
					if !tookPrefix() {
						return fmt.Errorf("no address in fd00:bad::/64")
					}
					return nil
				})
			} else if tookPrefix() {
				t.Errorf("observer took the prefix of mallory's router advertisement on %s (accept_ra is not 0)", tc.iface)
			}
			if tc.guarded {
				// The bridge did not learn victim's MAC on mallory's port.
				for _, ip := range []net.IP{vic.IP4, vic.IP6} {
					s.podPing(t, "observer", ip)
				}
			}
		})
	}
	for _, name := range names {
		if err := s.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: portSecNS, Name: name}}); err != nil {
			t.Error(err)
		}
	}
	s.kubectl(t, "", "delete", "namespace", portSecNS, "--wait=false")
	s.kubectl(t, "", "delete", "networkprofile", "atk-ps")
}

// l2Hosts reads a pod's MAC and addresses per interface from its network
// status.
func (s *suite) l2Hosts(t *testing.T, pod string) map[string]l2frame.Host {
	t.Helper()
	var st []struct {
		Interface string   `json:"interface"`
		MAC       string   `json:"mac"`
		IPs       []string `json:"ips"`
	}
	var out map[string]l2frame.Host
	eventually(t, time.Minute, "network status of "+pod+" with net1 and net2", func(ctx context.Context) error {
		p := s.getPod(t, portSecNS, pod)
		if err := json.Unmarshal([]byte(p.Annotations[podnetv1.NetworkStatusAnnotation]), &st); err != nil {
			return err
		}
		out = map[string]l2frame.Host{}
		for _, e := range st {
			mac, err := net.ParseMAC(e.MAC)
			if err != nil {
				continue
			}
			h := l2frame.Host{MAC: mac, LinkLocal: portsecurity.LinkLocalOf(mac)}
			for _, ip := range e.IPs {
				a := net.ParseIP(strings.Split(ip, "/")[0])
				if a.To4() != nil {
					h.IP4 = a.To4()
				} else if a != nil {
					h.IP6 = a
				}
			}
			if h.IP4 != nil && h.IP6 != nil {
				out[e.Interface] = h
			}
		}
		if len(out) != 5 {
			return fmt.Errorf("status %s", p.Annotations[podnetv1.NetworkStatusAnnotation])
		}
		return nil
	})
	return out
}

// buildL2Spoof builds the spoofing tool, static, for the busybox pods.
func buildL2Spoof(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(buildL2SpoofBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// buildL2SpoofBinary builds l2spoof and returns its path.
func buildL2SpoofBinary(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "l2spoof")
	cmd := exec.Command("go", "build", "-o", out, "podnet.io/podnet/test/l2frame/cmd/l2spoof")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build l2spoof: %v\n%s", err, b)
	}
	return out
}

// attack starts the sniffer in observer, has mallory send the attack's
// frames and a closing marker, and returns the cases the observer saw.
func (s *suite) attack(t *testing.T, iface string, mal, vic, obs l2frame.Host) []string {
	t.Helper()
	arg := func(h l2frame.Host) string { return fmt.Sprintf("%s,%s,%s", h.MAC, h.IP4, h.IP6) }
	flags := []string{"-i", iface, "-self", arg(mal), "-victim", arg(vic), "-peer", arg(obs), "-marker", "marker-" + iface}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sniff := exec.CommandContext(ctx, s.in.Kubectl(), append([]string{"-n", portSecNS, "exec", "observer", "-c", "app", "--", "/l2spoof", "sniff"}, flags...)...)
	sniff.Env = append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig)
	var stderr strings.Builder
	sniff.Stderr = &stderr
	stdout, err := sniff.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sniff.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		sniff.Wait()
		t.Fatalf("sniffer in observer did not start: %q %s", lines.Text(), stderr.String())
	}
	if out, err := s.kubectlErr("", append([]string{"-n", portSecNS, "exec", "mallory", "-c", "app", "--", "/l2spoof", "send"}, flags...)...); err != nil {
		t.Fatalf("mallory's l2spoof: %v\n%s", err, out)
	}
	var seen []string
	done := false
	for lines.Scan() {
		if name, ok := strings.CutPrefix(lines.Text(), "seen "); ok {
			seen = append(seen, name)
		}
		done = done || lines.Text() == "done"
	}
	if err := sniff.Wait(); err != nil || !done {
		t.Fatalf("sniffer in observer: %v (marker seen: %v) %s", err, done, stderr.String())
	}
	t.Logf("%s: the observer saw %q", iface, seen)
	return seen
}

// podPing pings ip once from a pod of the port-security namespace.
func (s *suite) podPing(t *testing.T, pod string, ip net.IP) {
	t.Helper()
	cmd := "ping"
	if ip.To4() == nil {
		cmd = "ping6"
	}
	eventually(t, time.Minute, fmt.Sprintf("%s pings %s", pod, ip), func(ctx context.Context) error {
		out, err := s.kubectlErr("", "-n", portSecNS, "exec", pod, "-c", "app", "--", cmd, "-c", "1", "-W", "2", ip.String())
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
}

// neighMAC is the MAC a pod's neighbour table holds for ip on iface.
func (s *suite) neighMAC(t *testing.T, pod, iface string, ip net.IP) string {
	t.Helper()
	out := s.kubectl(t, "", "-n", portSecNS, "exec", pod, "-c", "app", "--", "ip", "neigh", "show", "dev", iface)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && net.ParseIP(f[0]).Equal(ip) && f[1] == "lladdr" {
			return f[2]
		}
	}
	t.Logf("neighbours of %s on %s:\n%s", pod, iface, out)
	return ""
}
