package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// quotaTenantNS is the tenant whose addresses mallory tries to take; its
// pods are the admin's.
const quotaTenantNS = "atk-qb"

// quotaSpaceProfile offers mallory's namespace and quotaTenantNS one
// bridge network with one pool; cap is its ipam line's extra fields.
func quotaSpaceProfile(name, network, bridge, pool, extra string) string {
	return fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: %s}
spec:
  namespaceSelector:
    matchExpressions: [{key: podnet.io/tenant, operator: In, values: [x, qb]}]
  maxInterfaces: 4
  networks:
  - name: %s
    bridge: {name: %s}
    ipam: {pools: [%q]%s}
`, name, network, bridge, pool, extra)
}

// testQuotaSpaces runs attacks 5 and 6 of the quota: a second, uncapped
// profile on a capped pool's bridge, and a shared pool without a cap.
// Both now stop mallory at her quota while the other tenant still gets
// addresses; and the same CIDR on another bridge is another address
// space that hands out the very addresses the first one holds.
func (s *suite) testQuotaSpaces(t *testing.T, m client.Client) {
	s.kubectl(t, "", "create", "namespace", quotaTenantNS)
	s.kubectl(t, "", "label", "namespace", quotaTenantNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=qb")
	t.Run("SecondUncappedProfile", func(t *testing.T) { s.testSecondUncappedProfile(t, m) })
	t.Run("SharedPoolWithoutQuota", func(t *testing.T) { s.testSharedPoolWithoutQuota(t, m) })
	s.kubectl(t, "", "delete", "namespace", quotaTenantNS, "--wait=false")
}

// testSecondUncappedProfile (attack 5): profile atk-q5 caps pool
// 192.168.65.0/29 (6 addresses) at 2 per namespace; atk-q5-open offers
// the same pool on the same bridge without a cap. Mallory takes 2 through
// the capped profile; a third pod through the uncapped one waits with
// QuotaExceeded instead of taking the pool; the other tenant's two pods
// attach.
func (s *suite) testSecondUncappedProfile(t *testing.T, m client.Client) {
	const pool = "192.168.65.0/29"
	s.apply(t, quotaSpaceProfile("atk-q5", "q5-capped", "pnbr-atk5", pool, ", maxAddressesPerNamespace: 2"))
	s.apply(t, quotaSpaceProfile("atk-q5-open", "q5-open", "pnbr-atk5", pool, ""))
	s.waitWebhookOffers(t, attackNS, "q5-open", pool)
	// The webhook knows both profiles: the uncapped one's approval carries
	// the capped one's quota.
	s.waitWebhookOffers(t, attackNS, "q5-open", `"maxPerNamespace":2`)
	ps := &podSet{t: t, admin: s.client}
	for i := range 2 {
		ps.create(m, attackNS, fmt.Sprintf("q5-capped-%d", i), "q5-capped")
		s.waitNet1(t, attackNS, fmt.Sprintf("q5-capped-%d", i), true, 3*time.Minute)
	}
	ps.create(m, attackNS, "q5-open-0", "q5-open")
	s.waitOverQuota(t, attackNS, "q5-open-0")
	for i := range 2 {
		ps.create(s.client, quotaTenantNS, fmt.Sprintf("q5-b-%d", i), "q5-open")
	}
	for i := range 2 {
		inPool(t, s.waitNet1(t, quotaTenantNS, fmt.Sprintf("q5-b-%d", i), true, 3*time.Minute), pool)
	}
	s.waitOverQuota(t, attackNS, "q5-open-0")
	t.Logf("mallory stopped at 2 addresses of %s across both profiles; the other tenant got 2", pool)
	ps.deleteAll()
	s.kubectl(t, "", "delete", "networkprofile", "atk-q5", "atk-q5-open")
}

// testSharedPoolWithoutQuota (attack 6): profile atk-q6 offers pool
// 192.168.66.0/29 (6 addresses) to two tenants and sets no cap: each
// namespace gets the default quota, half the pool. Mallory's fourth pod
// waits with QuotaExceeded, the other tenant's three attach. Profile
// atk-q6-west offers the same CIDR on another bridge: with the first
// pool full, its pod still gets an address, one that a pod of the first
// bridge holds too.
func (s *suite) testSharedPoolWithoutQuota(t *testing.T, m client.Client) {
	const pool = "192.168.66.0/29"
	s.apply(t, quotaSpaceProfile("atk-q6", "q6-shared", "pnbr-atk6", pool, ""))
	s.waitWebhookOffers(t, attackNS, "q6-shared", pool)
	ps := &podSet{t: t, admin: s.client}
	for i := range 4 {
		ps.create(m, attackNS, fmt.Sprintf("q6-m-%d", i), "q6-shared")
	}
	held := map[string]string{}
	for i := range 4 {
		name := fmt.Sprintf("q6-m-%d", i)
		p := s.waitSettled(t, attackNS, name)
		if p == nil {
			continue
		}
		for _, ip := range inPool(t, p, pool) {
			held[ip] = attackNS + "/" + name
		}
	}
	if len(held) != 3 {
		t.Fatalf("mallory holds %d addresses of the shared pool %s (%v), want the default quota 3", len(held), pool, held)
	}
	for i := range 3 {
		ps.create(s.client, quotaTenantNS, fmt.Sprintf("q6-b-%d", i), "q6-shared")
	}
	for i := range 3 {
		name := fmt.Sprintf("q6-b-%d", i)
		for _, ip := range inPool(t, s.waitNet1(t, quotaTenantNS, name, true, 3*time.Minute), pool) {
			if prev, dup := held[ip]; dup {
				t.Errorf("address %s held by %s and %s/%s on one bridge", ip, prev, quotaTenantNS, name)
			}
			held[ip] = quotaTenantNS + "/" + name
		}
	}

	s.apply(t, quotaSpaceProfile("atk-q6-west", "q6-west", "pnbr-atk6w", pool, ""))
	s.waitWebhookOffers(t, quotaTenantNS, "q6-west", pool)
	ps.create(s.client, quotaTenantNS, "q6-west", "q6-west")
	for _, ip := range inPool(t, s.waitNet1(t, quotaTenantNS, "q6-west", true, 3*time.Minute), pool) {
		if _, on := held[ip]; !on {
			t.Errorf("the other bridge's pod got %s, not an address the full first bridge holds (%v)", ip, held)
		}
		t.Logf("pnbr-atk6w hands out %s, held on pnbr-atk6 by %s too", ip, held[ip])
	}
	ps.deleteAll()
	s.kubectl(t, "", "delete", "networkprofile", "atk-q6", "atk-q6-west")
}

// waitOverQuota waits until a pod waits with the condition reason
// QuotaExceeded, and checks that nothing was attached: no net1 address is
// reported and no app container runs (it waits behind podnet's init
// container).
func (s *suite) waitOverQuota(t *testing.T, ns, name string) {
	t.Helper()
	s.waitCondition(t, ns, name, "QuotaExceeded")
	p := s.getPod(t, ns, name)
	if _, has := p.Annotations[podnetv1.NetworkStatusAnnotation]; has {
		if st, err := statusOf(*p); err != nil || len(ipsOf(st, "net1")) != 0 {
			t.Fatalf("pod %s/%s over quota reports net1 addresses %v (%v)", ns, name, ipsOf(st, "net1"), err)
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running != nil {
			t.Fatalf("container %s of pod %s/%s over quota runs without its networks", c.Name, ns, name)
		}
	}
}

// waitSettled waits until a pod either has net1 or waits with the
// condition reason QuotaExceeded, and returns it when it has net1 (nil
// when over quota).
func (s *suite) waitSettled(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	eventually(t, 3*time.Minute, fmt.Sprintf("pod %s/%s attached or over quota", ns, name), func(ctx context.Context) error {
		p := s.getPod(t, ns, name)
		if st, err := statusOf(*p); err == nil && len(ipsOf(st, "net1")) > 0 {
			got = p
			return nil
		}
		for _, c := range p.Status.Conditions {
			if string(c.Type) == podnetv1.NetworksReadyCondition && c.Reason == "QuotaExceeded" {
				return nil
			}
		}
		return fmt.Errorf("neither attached nor over quota")
	})
	return got
}

// podSet creates pods that ask for a network, on node1, and deletes them
// all at the end.
type podSet struct {
	t     *testing.T
	admin client.Client
	pods  []client.ObjectKey
}

func (ps *podSet) create(c client.Client, ns, name, network string) {
	ps.t.Helper()
	p := attackPod(name, ns, map[string]string{podnetv1.NetworksAnnotation: network})
	if err := c.Create(context.Background(), p); err != nil {
		ps.t.Fatal(err)
	}
	ps.pods = append(ps.pods, client.ObjectKeyFromObject(p))
}

// deleteAll deletes the pods at once, as the admin.
func (ps *podSet) deleteAll() {
	ps.t.Helper()
	for _, k := range ps.pods {
		err := ps.admin.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}})
		if client.IgnoreNotFound(err) != nil {
			ps.t.Fatal(err)
		}
	}
}
