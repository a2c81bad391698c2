package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/test/netnstest"
)

const wireCheckNS = "wirecheck"

// wireCheckProfile offers a macvlan network on the nodes' data NIC whose
// addresses are checked on the wire, and whose gateway must answer, and
// one whose gateway nobody holds.
var wireCheckProfile = fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-wirecheck}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: wc}
  networks:
  - name: checked
    macvlan: {master: %[1]s, mode: bridge}
    addressCheck: {duplicates: true, gateway: true}
    ipam:
      pools: ["192.168.67.0/24", "fd00:67::/64"]
      gateways: ["192.168.67.1"]
      allowStatic: true
  - name: unguarded
    macvlan: {master: %[1]s, mode: bridge}
    allowRawSockets: true
    portSecurity: {disabled: true}
    addressCheck: {duplicates: true}
    ipam: {pools: ["192.168.78.0/24"], allowStatic: true}
  - name: bridged
    bridge: {name: pnbr-wc}
    allowRawSockets: true
    addressCheck: {duplicates: true}
    ipam: {pools: ["192.168.77.0/24"], allowStatic: true}
  - name: silent
    macvlan: {master: %[1]s, mode: bridge}
    addressCheck: {gateway: true}
    ipam: {pools: ["192.168.76.0/24"], gateways: ["192.168.76.1"]}
`, localcluster.DataNIC)

// testAddressCheck: a host outside podnet on the data NIC's segment (a
// macvlan link of node 2's data NIC, in a netns of its own) is the
// network's gateway and holds 192.168.67.200 and fd00:67::200. A pod on node
// 1 whose static addresses are free gets its interface after the checks;
// a pod that asks for .200 does not: its condition and an Event say
// AddressConflict and name the address and the host's MAC, and its app
// stays held. Once the host lets the address go, the agent's next attempt
// attaches it. A pod on a network whose gateway nobody holds waits with
// GatewayUnanswered.
func (s *suite) testAddressCheck(t *testing.T) {
	ctx := context.Background()
	explain := strings.Join(strings.Fields(s.kubectl(t, "", "explain", "networkprofiles.spec.networks.addressCheck")), " ")
	if !strings.Contains(explain, "ARP probes") {
		t.Errorf("kubectl explain does not teach addressCheck:\n%s", explain)
	}
	outside, outsideMAC := s.outsideHost(t, "wcout0", "192.168.67.1/24", "192.168.67.200/24", "fd00:67::200/64")
	s.tenantWith(t, "e2e-wirecheck", wireCheckProfile, wireCheckNS, "wc")
	s.waitWebhookOffers(t, wireCheckNS, "checked", "192.168.67.0/24")
	static := func(v4, v6 string) map[string]string {
		return map[string]string{podnetv1.NetworksAnnotation: fmt.Sprintf(`[{"name": "checked", "ips": [%q, %q]}]`, v4, v6)}
	}
	for name, ann := range map[string]map[string]string{
		"free": static("192.168.67.10/24", "fd00:67::10/64"),
		"dup4": static("192.168.67.200/24", "fd00:67::11/64"),
		"dup6": static("192.168.67.12/24", "fd00:67::200/64"),
		"nogw": {podnetv1.NetworksAnnotation: "silent"},
	} {
		if err := s.client.Create(ctx, attackPod(name, wireCheckNS, ann)); err != nil {
			t.Fatal(err)
		}
	}
	s.waitNet1(t, wireCheckNS, "free", true, 3*time.Minute)
	if out := s.kubectl(t, "", "-n", wireCheckNS, "exec", "free", "-c", "app", "--", "ip", "-o", "addr", "show", "net1"); !strings.Contains(out, "192.168.67.10/24") || !strings.Contains(out, "fd00:67::10/64") {
		t.Fatalf("the checked interface lacks its addresses: %s", out)
	}
	for name, addr := range map[string]string{"dup4": "192.168.67.200", "dup6": "fd00:67::200"} {
		s.waitCondition(t, wireCheckNS, name, podnetv1.ReasonAddressConflict)
		s.waitEventNaming(t, wireCheckNS, name, podnetv1.ReasonAddressConflict, addr+" is in use on its network by MAC "+outsideMAC)
		if p := s.getPod(t, wireCheckNS, name); appStarted(p) {
			t.Fatalf("pod %s started its app with an address another host holds: %+v", name, p.Status.ContainerStatuses)
		}
	}

	s.waitCondition(t, wireCheckNS, "nogw", podnetv1.ReasonGatewayUnanswered)
	s.waitEventNaming(t, wireCheckNS, "nogw", podnetv1.ReasonGatewayUnanswered, "gateway 192.168.76.1 did not answer")

	runIP(t, "-n", outside, "addr", "del", "192.168.67.200/24", "dev", "wcout0")
	s.waitNet1(t, wireCheckNS, "dup4", true, 3*time.Minute)
	if c := networksReady(s.getPod(t, wireCheckNS, "dup4")); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("dup4 after the outside host let 192.168.67.200 go: condition %+v", c)
	}

	t.Run("AHostilePodAnswersForAnAddress", s.testHostileARP)
}

// testHostileARP: a tenant pod, mallory, keeps NET_RAW (its networks
// allow raw sockets) and answers every ARP request for an address it does
// not hold.
// On a macvlan network whose admin turned port security off, the next pod
// that asks for that address finds mallory's answer in its probe and
// waits with AddressConflict naming mallory's MAC. On a bridge network,
// port security drops mallory's answers at its port (their sender address
// is not mallory's), so the next pod gets the address although mallory
// answered its probe.
func (s *suite) testHostileARP(t *testing.T) {
	ctx := context.Background()
	if err := s.client.Create(ctx, attackPod("mallory", wireCheckNS, map[string]string{podnetv1.NetworksAnnotation: "unguarded, bridged"})); err != nil {
		t.Fatal(err)
	}
	p := s.waitNet1(t, wireCheckNS, "mallory", true, 3*time.Minute)
	if caps := s.capabilities(t, wireCheckNS, "mallory"); caps&(1<<capNetRaw) == 0 {
		t.Fatalf("mallory lacks NET_RAW (CapEff %x): its answers would show nothing", caps)
	}
	s.kubectl(t, buildL2Spoof(t), "-n", wireCheckNS, "exec", "-i", "mallory", "-c", "app", "--", "sh", "-c", "cat > /l2spoof && chmod 755 /l2spoof")
	macOf := func(iface string) string {
		out := s.kubectl(t, "", "-n", wireCheckNS, "exec", "mallory", "-c", "app", "--", "cat", "/sys/class/net/"+iface+"/address")
		return strings.TrimSpace(out)
	}
	for _, tc := range []struct {
		network, iface, addr string
		conflict             bool
	}{
		{"unguarded", "net1", "192.168.78.40", true},
		{"bridged", "net2", "192.168.77.40", false},
	} {
		victim := "claims-" + tc.network
		answered := s.answerARP(t, "mallory", tc.iface, tc.addr, func() {
			ann := map[string]string{podnetv1.NetworksAnnotation: fmt.Sprintf(`[{"name": %q, "ips": ["%s/24"]}]`, tc.network, tc.addr)}
			if err := s.client.Create(ctx, attackPod(victim, wireCheckNS, ann)); err != nil {
				t.Fatal(err)
			}
			if tc.conflict {
				s.waitEventNaming(t, wireCheckNS, victim, podnetv1.ReasonAddressConflict, tc.addr+" is in use on its network by MAC "+macOf(tc.iface))
				if c := networksReady(s.getPod(t, wireCheckNS, victim)); c == nil || c.Reason != podnetv1.ReasonAddressConflict {
					t.Fatalf("pod %s: condition %+v, want AddressConflict", victim, c)
				}
				return
			}
			s.waitNet1(t, wireCheckNS, victim, true, 3*time.Minute)
		})
		if answered == 0 {
			t.Fatalf("%s: mallory answered no ARP request for %s: the check proves nothing", tc.network, tc.addr)
		}
		t.Logf("%s: mallory answered %d ARP requests for %s", tc.network, answered, tc.addr)
	}
	s.stillRunning(t, p)
}

// answerARP runs `l2spoof answer` in the pod for addr on iface while
// during runs, and returns how many requests it answered.
func (s *suite) answerARP(t *testing.T, pod, iface, addr string, during func()) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, s.in.Kubectl(), "-n", wireCheckNS, "exec", pod, "-c", "app", "--", "/l2spoof", "answer", "-i", iface, "-ip", addr, "-timeout", "3m")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		cancel()
		_ = cmd.Wait()
		t.Fatalf("l2spoof answer in %s did not start: %q", pod, lines.Text())
	}
	count := make(chan int, 1)
	go func() {
		n := 0
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "answered ") {
				n++
			}
		}
		count <- n
	}()
	during()
	// Stop the answerer in the pod too: kubectl's end alone may leave it.
	_, _ = s.kubectlErr("", "-n", wireCheckNS, "exec", pod, "-c", "app", "--", "pkill", "-f", "l2spoof answer")
	cancel()
	n := <-count
	_ = cmd.Wait()
	return n
}

// outsideHost makes a host outside podnet on the data NIC's segment: a
// macvlan link of node 2's data NIC, in a netns of its own, holding addrs
// (IPv6 ones without DAD), up. It returns the netns and the link's MAC.
func (s *suite) outsideHost(t *testing.T, link string, addrs ...string) (ns, mac string) {
	t.Helper()
	n2 := filepath.Base(s.cluster.Nodes[1].NetNS)
	ns, _ = netnstest.NewNetNS(t, "pne2e", link)
	runIP(t, "-n", n2, "link", "add", link, "link", s.cluster.Nodes[1].DataNIC, "type", "macvlan", "mode", "bridge")
	runIP(t, "-n", n2, "link", "set", link, "netns", ns)
	for _, a := range addrs {
		args := []string{"-n", ns, "addr", "add", a, "dev", link}
		if strings.Contains(a, ":") {
			args = append(args, "nodad")
		}
		runIP(t, args...)
	}
	runIP(t, "-n", ns, "link", "set", link, "up")
	return ns, linkMAC(t, ns, link)
}

// tenantWith applies the profile (named name) and makes the namespace ns,
// opted in and labelled podnet.io/tenant=tenant; both go when the test
// ends.
func (s *suite) tenantWith(t *testing.T, name, profile, ns, tenant string) {
	t.Helper()
	s.apply(t, profile)
	s.kubectl(t, "", "create", "namespace", ns)
	s.kubectl(t, "", "label", "namespace", ns, podnetv1.EnabledLabel+"=true", "podnet.io/tenant="+tenant)
	t.Cleanup(func() {
		s.kubectl(t, "", "delete", "namespace", ns, "--ignore-not-found", "--wait=false")
		s.kubectl(t, "", "delete", "networkprofile", name, "--ignore-not-found", "--wait=false")
	})
}

// appStarted reports whether the pod's app container has run.
func appStarted(p *corev1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "app" && (c.State.Running != nil || c.State.Terminated != nil || c.LastTerminationState.Terminated != nil) {
			return true
		}
	}
	return false
}

const settingsNS = "ifsettings"

// settingsProfile offers a bridge network whose interfaces' arp_ignore
// (up to max) and txqueuelen tenants may choose, and whose
// tx-checksum-ip-generic they may turn off.
func settingsProfile(arpIgnoreMax int) string {
	return fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-settings}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: st}
  networks:
  - name: tuned
    bridge: {name: pnbr-set}
    ipam: {pools: ["192.168.68.0/24"]}
    settings:
    - {name: arp_ignore, min: 0, max: %d}
    - {name: txqueuelen, min: 100, max: 5000}
    offloads: [tx-checksum-ip-generic]
`, arpIgnoreMax)
}

// testSettings: a tenant asks for per-interface settings in the Multus
// request. Within the profile's ranges they are in place in the pod
// (read from inside it); outside them, or named by a sysctl path or
// another setting, the webhook refuses the pod naming the field, the
// value and the limit; an offload it lists is off in the pod, one it does
// not list is refused; when the admin narrows the range, the running pod's
// value comes into it in place, and an Event says so.
func (s *suite) testSettings(t *testing.T) {
	ctx := context.Background()
	explain := strings.Join(strings.Fields(s.kubectl(t, "", "explain", "networkprofiles.spec.networks.settings")), " ")
	if !strings.Contains(explain, "arp_ignore") || !strings.Contains(explain, "txqueuelen") {
		t.Errorf("kubectl explain does not name the settings:\n%s", explain)
	}
	s.tenantWith(t, "e2e-settings", settingsProfile(2), settingsNS, "st")
	s.waitWebhookOffers(t, settingsNS, "tuned", "192.168.68.0/24")
	ask := func(settings string) map[string]string {
		return map[string]string{podnetv1.NetworksAnnotation: fmt.Sprintf(`[{"name": "tuned", "settings": %s}]`, settings)}
	}
	tuned := attackPod("tuned", settingsNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name": "tuned", "settings": {"arp_ignore": 2, "txqueuelen": 500}, "offloads": {"tx-checksum-ip-generic": false}}]`})
	if err := s.client.Create(ctx, tuned); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, settingsNS, "tuned", true, 3*time.Minute)
	for file, want := range map[string]string{"/proc/sys/net/ipv4/conf/net1/arp_ignore": "2", "/sys/class/net/net1/tx_queue_len": "500"} {
		if got := s.podFile(t, settingsNS, "tuned", file); got != want {
			t.Errorf("%s in the pod = %s, want %s", file, got, want)
		}
	}
	// The pod's image has no ethtool: read the feature from the node, in
	// the pod's netns, found by net1's MAC.
	mac := s.podFile(t, settingsNS, "tuned", "/sys/class/net/net1/address")
	out, err := exec.Command("ip", "netns", "exec", podNetNSByMAC(t, mac), "ethtool", "-k", "net1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "tx-checksum-ip-generic: off") {
		t.Errorf("ethtool -k net1 in the pod: %v\n%s\nwant tx-checksum-ip-generic off", err, out)
	}

	for name, tc := range map[string]struct{ settings, want string }{
		"above-range": {`{"arp_ignore": 3}`, "within 0–2"},
		"not-offered": {`{"rp_filter": 2}`, "does not let tenants choose rp_filter"},
		"sysctl-path": {`{"net.ipv4.conf.all.arp_ignore": 1}`, "settings[net.ipv4.conf.all.arp_ignore]"},
	} {
		err := s.client.Create(ctx, attackPod("refused-"+name, settingsNS, ask(tc.settings)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: created with settings %s: %v; want a refusal saying %q", name, tc.settings, err, tc.want)
		}
	}

	err = s.client.Create(ctx, attackPod("refused-offload", settingsNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name": "tuned", "offloads": {"tx-tcp-segmentation": false}}]`}))
	if err == nil || !strings.Contains(err.Error(), "does not let tenants change offload tx-tcp-segmentation") {
		t.Errorf("an offload the profile does not list: %v", err)
	}

	index := s.podFile(t, settingsNS, "tuned", "/sys/class/net/net1/ifindex")
	s.apply(t, settingsProfile(1))
	eventually(t, narrowWait, "arp_ignore lowered to 1 in the running pod", func(context.Context) error {
		if v := s.podFile(t, settingsNS, "tuned", "/proc/sys/net/ipv4/conf/net1/arp_ignore"); v != "1" {
			return fmt.Errorf("arp_ignore %s", v)
		}
		return nil
	})
	if now := s.podFile(t, settingsNS, "tuned", "/sys/class/net/net1/ifindex"); now != index {
		t.Errorf("net1 re-created (ifindex %s → %s), not changed in place", index, now)
	}
	s.waitEventNaming(t, settingsNS, "tuned", "GrantNarrowed", "setting arp_ignore 2 changed to 1")
}

// podNetNSByMAC finds the named netns (the runtime's, on this machine)
// whose net1 has mac.
func podNetNSByMAC(t *testing.T, mac string) string {
	t.Helper()
	list, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v\n%s", err, list)
	}
	for _, line := range strings.Split(string(list), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cni-") {
			continue
		}
		if out, err := exec.Command("ip", "-n", f[0], "-o", "link", "show", "net1").CombinedOutput(); err == nil && strings.Contains(string(out), mac) {
			return f[0]
		}
	}
	t.Fatalf("no pod netns has a net1 with MAC %s", mac)
	return ""
}
