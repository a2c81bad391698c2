package e2e

import (
	"context"
	"fmt"
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
