package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// quotaProfile offers mallory's namespace a network whose pool she may
// hold at most two addresses of.
const quotaProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-quota}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: x}
  maxInterfaces: 4
  networks:
  - name: capped
    bridge: {name: pnbr-atkq}
    ipam: {pools: ["192.168.61.0/24"], maxAddressesPerNamespace: 2}
`

// otherTenantNS belongs to another tenant; its pods are the admin's.
const otherTenantNS = "atk-b"

// otherTenantProfile offers the other tenant a network named "data" like
// mallory's profile "atk", on the given bridge and pool: pnbr-atk and
// 192.168.60.0/24 make it the very network "atk" offers.
func otherTenantProfile(bridge, pool string) string {
	return fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-b}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: b}
  networks:
  - name: data
    bridge: {name: %s}
    ipam: {pools: [%q]}
`, bridge, pool)
}

// testQuotaExhaustion: mallory tries to drain a pool capped at two
// addresses per namespace. One pod asking for three is refused at
// admission; a third pod waits (in podnet's init container) with
// QuotaExceeded and an Event, and attaches once one of her pods goes.
func (s *suite) testQuotaExhaustion(t *testing.T, m client.Client) {
	ctx := context.Background()
	s.apply(t, quotaProfile)
	s.waitWebhookOffers(t, attackNS, "capped", "192.168.61.0/24")
	greedy := attackPod("greedy", attackNS, map[string]string{podnetv1.NetworksAnnotation: "capped, capped@net2, capped@net3"})
	err := m.Create(ctx, greedy)
	if err == nil || !strings.Contains(err.Error(), "ipam.maxAddressesPerNamespace 2") {
		t.Fatalf("a pod asking for 3 addresses of a pool capped at 2: %v, want a denial naming ipam.maxAddressesPerNamespace 2", err)
	}
	t.Logf("refused at admission: %v", err)

	ask := map[string]string{podnetv1.NetworksAnnotation: "capped"}
	for _, name := range []string{"quota-1", "quota-2"} {
		if err := m.Create(ctx, attackPod(name, attackNS, ask)); err != nil {
			t.Fatal(err)
		}
		s.waitNet1(t, attackNS, name, true, 3*time.Minute)
	}
	if err := m.Create(ctx, attackPod("quota-3", attackNS, ask)); err != nil {
		t.Fatal(err)
	}
	s.waitCondition(t, attackNS, "quota-3", "QuotaExceeded")
	s.waitEvent(t, attackNS, "quota-3", "QuotaExceeded")
	// Its app container waits behind podnet's init container, and no
	// address is reported: nothing was attached.
	waiting := s.getPod(t, attackNS, "quota-3")
	if _, has := waiting.Annotations[podnetv1.NetworkStatusAnnotation]; has {
		if st, err := statusOf(*waiting); err != nil || len(ipsOf(st, "net1")) != 0 {
			t.Fatalf("a pod over quota reports net1 addresses %v (%v)", ipsOf(st, "net1"), err)
		}
	}
	for _, c := range waiting.Status.ContainerStatuses {
		if c.State.Running != nil {
			t.Fatalf("container %s of the pod over quota runs without its networks", c.Name)
		}
	}

	if err := m.Delete(ctx, s.getPod(t, attackNS, "quota-1")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.waitNet1(t, attackNS, "quota-3", true, 6*time.Minute)
	t.Logf("quota-3 attached %v after quota-1 was deleted", time.Since(start).Round(time.Second))
	for _, name := range []string{"quota-2", "quota-3"} {
		if err := m.Delete(ctx, s.getPod(t, attackNS, name)); err != nil {
			t.Fatal(err)
		}
	}
	s.kubectl(t, "", "delete", "networkprofile", "atk-quota")
}

// testSecondProfileSameNetworkName: another tenant's profile names its
// network "data" too. With another pool the two never meet; with the very
// same pool, no address is ever held twice across the two namespaces.
func (s *suite) testSecondProfileSameNetworkName(t *testing.T, m client.Client) {
	ctx := context.Background()
	s.kubectl(t, "", "create", "namespace", otherTenantNS)
	s.kubectl(t, "", "label", "namespace", otherTenantNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=b")
	s.apply(t, otherTenantProfile("pnbr-atkb", "192.168.62.0/24"))
	s.waitWebhookOffers(t, otherTenantNS, "data", "192.168.62.0/24")

	if err := s.client.Create(ctx, attackPod("bob-1", otherTenantNS, nil)); err != nil {
		t.Fatal(err)
	}
	bob := s.waitNet1(t, otherTenantNS, "bob-1", true, 3*time.Minute)
	victim := s.getPod(t, attackNS, "victim")
	inPool(t, bob, "192.168.62.0/24")
	inPool(t, victim, "192.168.60.0/24")

	// The same pool under both profiles: pods of both tenants at once.
	s.apply(t, otherTenantProfile("pnbr-atk", "192.168.60.0/24"))
	s.waitWebhookOffers(t, otherTenantNS, "data", "192.168.60.0/24")
	var names []client.ObjectKey
	for i := range 3 {
		mine := attackPod(fmt.Sprintf("shared-m%d", i), attackNS, nil)
		theirs := attackPod(fmt.Sprintf("shared-b%d", i), otherTenantNS, nil)
		if err := m.Create(ctx, mine); err != nil {
			t.Fatal(err)
		}
		if err := s.client.Create(ctx, theirs); err != nil {
			t.Fatal(err)
		}
		names = append(names, client.ObjectKeyFromObject(mine), client.ObjectKeyFromObject(theirs))
	}
	holder := map[string]string{}
	for _, ns := range []string{attackNS, otherTenantNS} {
		var pods corev1.PodList
		if err := s.client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Annotations[podnetv1.NetworksAnnotation] != "data" || p.DeletionTimestamp != nil {
				continue
			}
			if !strings.HasPrefix(p.Name, "shared-") && p.Name != "victim" && p.Name != "clone" {
				continue
			}
			got := s.waitNet1(t, ns, p.Name, true, 3*time.Minute)
			for _, ip := range inPool(t, got, "192.168.60.0/24") {
				if prev, dup := holder[ip]; dup {
					t.Errorf("address %s held by both %s and %s/%s", ip, prev, ns, p.Name)
				}
				holder[ip] = ns + "/" + p.Name
			}
		}
	}
	var claims podnetv1.IPClaimList
	if err := s.client.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	// Each held address is claimed, once, for the pod that holds it:
	// an address attached without its own claim is one a third pod can
	// be given too.
	claimedBy := map[string][]string{}
	for _, c := range claims.Items {
		if c.Spec.AddressSpace != atkSpace { // other suites' networks may reuse the CIDR
			continue
		}
		claimedBy[c.Spec.Address] = append(claimedBy[c.Spec.Address], c.Spec.Pod.Namespace+"/"+c.Spec.Pod.Name)
	}
	for ip, pod := range holder {
		if got := claimedBy[ip]; len(got) != 1 || got[0] != pod {
			t.Errorf("address %s of %s: claimed for %v, want that pod alone", ip, pod, got)
		}
	}
	t.Logf("%d pods of two tenants share pool 192.168.60.0/24 through two profiles, every address held once: %v", len(holder), holder)
	for _, k := range names {
		if err := s.client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}); err != nil {
			t.Fatal(err)
		}
	}
	s.kubectl(t, "", "delete", "networkprofile", "atk-b")
	s.kubectl(t, "", "delete", "namespace", otherTenantNS, "--wait=false")
}

// inPool checks that every net1 address of the pod lies in pool and
// returns them.
func inPool(t *testing.T, p *corev1.Pod, pool string) []string {
	t.Helper()
	st, err := statusOf(*p)
	if err != nil {
		t.Fatal(err)
	}
	ips := ipsOf(st, "net1")
	if len(ips) == 0 {
		t.Fatalf("pod %s/%s has no address on net1", p.Namespace, p.Name)
	}
	for _, ip := range ips {
		if !netip.MustParsePrefix(pool).Contains(netip.MustParseAddr(ip)) {
			t.Errorf("pod %s/%s holds %s, outside its pool %s", p.Namespace, p.Name, ip, pool)
		}
	}
	return ips
}

// The capability bits of /proc/<pid>/status (linux/capability.h).
const (
	capNetAdmin = 12
	capNetRaw   = 13
)

// testDefaultNetRaw: mallory's pod dropped nothing itself, yet holds
// neither NET_RAW nor NET_ADMIN and cannot open a packet socket to send a
// spoofed ARP frame; a pod of a network that allows raw sockets keeps
// NET_RAW; a pod without podnet networks shows that the runtime's default
// set does hold it; an ephemeral container that keeps it is refused.
func (s *suite) testDefaultNetRaw(t *testing.T, m client.Client) {
	ctx := context.Background()
	victim := s.getPod(t, attackNS, "victim")
	if c := victim.Spec.Containers[0]; !dropsNetRaw(c.SecurityContext) {
		t.Fatalf("container %s of the podnet pod keeps NET_RAW: %+v", c.Name, c.SecurityContext)
	}
	if caps := s.capabilities(t, attackNS, "victim"); caps&(1<<capNetRaw|1<<capNetAdmin) != 0 {
		t.Fatalf("the podnet pod's process holds NET_RAW or NET_ADMIN: CapEff %x", caps)
	}
	cloneIPs := inPool(t, s.getPod(t, attackNS, "clone"), "192.168.60.0/24")
	out, err := s.kubectlErr("", "-n", attackNS, "exec", "victim", "-c", "app", "--",
		"arping", "-c", "1", "-w", "2", "-I", "net1", "-s", "192.168.60.250", cloneIPs[0])
	if err == nil || !strings.Contains(strings.ToLower(out+err.Error()), "not permitted") {
		t.Fatalf("spoofed ARP from the podnet pod: %v\n%s\nwant a refused packet socket", err, out)
	}
	t.Logf("spoofed ARP refused: %v", err)

	// A network whose profile allows raw sockets keeps NET_RAW.
	raw := attackPod("raw-allowed", tenantNS, nil)
	if err := s.client.Create(ctx, raw); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, tenantNS, "raw-allowed", true, 3*time.Minute)
	if caps := s.capabilities(t, tenantNS, "raw-allowed"); caps&(1<<capNetRaw) == 0 {
		t.Fatalf("a pod whose only network allows raw sockets lost NET_RAW: CapEff %x", caps)
	}
	if err := s.client.Delete(ctx, raw); err != nil {
		t.Fatal(err)
	}

	plain := attackPod("plain", attackOffNS, nil)
	delete(plain.Annotations, podnetv1.NetworksAnnotation)
	if err := m.Create(ctx, plain); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "pod plain running", func(ctx context.Context) error {
		if p := s.getPod(t, attackOffNS, "plain"); p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	if caps := s.capabilities(t, attackOffNS, "plain"); caps&(1<<capNetRaw) == 0 {
		t.Fatalf("a pod without podnet networks lacks NET_RAW (CapEff %x): the runtime's default set no longer holds it, so this test shows nothing", caps)
	}

	err = s.updateEphemeral(t, m, attackNS, "victim", func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "raw", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}}
	})
	wantPolicyRefusal(t, err, "must drop NET_RAW")
}

// capabilities reads the effective capability set of the pod's first
// process.
func (s *suite) capabilities(t *testing.T, ns, pod string) uint64 {
	t.Helper()
	out, err := s.kubectlErr("", "-n", ns, "exec", pod, "-c", "app", "--", "cat", "/proc/1/status")
	if err != nil {
		t.Fatalf("read capabilities of %s/%s: %v\n%s", ns, pod, err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return caps
		}
	}
	t.Fatalf("no CapEff in /proc/1/status of %s/%s:\n%s", ns, pod, out)
	return 0
}

func dropsNetRaw(sc *corev1.SecurityContext) bool {
	if sc == nil || sc.Capabilities == nil {
		return false
	}
	for _, c := range sc.Capabilities.Drop {
		if n := strings.ToUpper(string(c)); n == "NET_RAW" || n == "CAP_NET_RAW" || n == "ALL" {
			return true
		}
	}
	return false
}

// waitEvent waits for an Event of the given reason on a pod.
func (s *suite) waitEvent(t *testing.T, ns, pod, reason string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("event %s on pod %s/%s", reason, ns, pod), func(ctx context.Context) error {
		var evs corev1.EventList
		if err := s.client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == pod && e.Reason == reason {
				t.Logf("event %s: %s", e.Reason, e.Message)
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", reason, len(evs.Items))
	})
}

// waitWebhookOffers waits until the webhook, asked by a server-side dry
// run, approves network with pool for a pod of ns: its profile cache has
// caught up with a profile just applied.
func (s *suite) waitWebhookOffers(t *testing.T, ns, network, pool string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("webhook offers %s from %s to %s", network, pool, ns), func(ctx context.Context) error {
		p := attackPod("probe", ns, map[string]string{podnetv1.NetworksAnnotation: network})
		if err := s.client.Create(ctx, p, client.DryRunAll); err != nil {
			return err
		}
		if a := p.Annotations[podnetv1.ApprovedAnnotation]; !strings.Contains(a, pool) {
			return fmt.Errorf("approval %s", a)
		}
		return nil
	})
}
