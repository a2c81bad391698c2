package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// The persistent network: a bridge whose addresses and MACs a StatefulSet
// pod keeps across deletion (ipam.persistent), 2 addresses per namespace,
// held 45 s once the StatefulSet no longer holds them.
const (
	stickyReleaseAfter = 45 * time.Second
	stickyProfile      = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-sticky}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: x}
  networks:
  - name: sticky
    bridge: {name: pnbr-atkp}
    ipam:
      pools: ["192.168.64.0/24"]
      maxAddressesPerNamespace: 2
      persistent: {statefulSets: true, releaseAfter: 45s}
    macRange: {rangeStart: "02:00:00:c0:00:00", rangeEnd: "02:00:00:c0:00:0f"}
`
)

// testStatefulSetKeepsAddresses: a StatefulSet's pod deleted and
// recreated gets the same address and MAC, also when the recreated pod
// lands on the other node; mallory scales the StatefulSet to zero and
// creates another StatefulSet to hold more than her quota: refused
// (QuotaExceeded) while the held addresses count; a bare pod of a held
// pod's name with a faked ownerReference takes nothing over; once
// releaseAfter has passed the held addresses are released and the other
// StatefulSet's pod attaches.
func (s *suite) testStatefulSetKeepsAddresses(t *testing.T, m client.Client) {
	ctx := context.Background()
	s.apply(t, stickyProfile)
	s.waitWebhookOffers(t, attackNS, "sticky", `"persistent":{"statefulSets":true`)
	grant := []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "statefulsets"}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"statefulsets", "statefulsets/scale"}, Verbs: []string{"*"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "statefulsets"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "statefulsets"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: mallory}}},
	}
	for _, o := range grant {
		if err := s.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	keep := stickySet("keep", 2, node1)
	// The API server's authorizer learns of the new binding from its own
	// watch: until then mallory's create is forbidden.
	eventually(t, 30*time.Second, "mallory may create StatefulSets", func(ctx context.Context) error {
		return m.Create(ctx, keep)
	})
	before := s.waitStickyPods(t, "keep", 2, node1)
	t.Logf("keep's pods: %v", before)

	// Deleted and recreated, then moved to the other node.
	old := s.getPod(t, attackNS, "keep-0").UID
	if err := m.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: "keep-0"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "keep-0 recreated", func(ctx context.Context) error {
		var p corev1.Pod
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: attackNS, Name: "keep-0"}, &p); err != nil {
			return err
		}
		if p.UID == old {
			return fmt.Errorf("keep-0 is still the pod %s", old)
		}
		return nil
	})
	s.sameAddresses(t, before, s.waitStickyPods(t, "keep", 2, node1), "after keep-0 was deleted")
	updateSet(t, m, keep, func(set *appsv1.StatefulSet) {
		set.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node2}
	})
	s.sameAddresses(t, before, s.waitStickyPods(t, "keep", 2, node2), "after both pods moved to "+node2)

	// Squatting: scale to zero, then another StatefulSet.
	updateSet(t, m, keep, func(set *appsv1.StatefulSet) { set.Spec.Replicas = ptr.To(int32(0)) })
	scaled := time.Now()
	s.waitPodsGone(t, "keep")
	if err := m.Create(ctx, stickySet("squat", 1, node1)); err != nil {
		t.Fatal(err)
	}
	s.waitReason(t, "squat-0", "QuotaExceeded")
	t.Logf("squat-0 refused while keep's 2 addresses are held")

	// A bare pod named keep-1, its controller reference faking keep's
	// StatefulSet with another UID.
	fake := attackPod("keep-1", attackNS, map[string]string{podnetv1.NetworksAnnotation: "sticky"})
	fake.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "keep", UID: "0d0d0d0d-0000-4000-8000-000000000000", Controller: ptr.To(true)}}
	if err := m.Create(ctx, fake); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the faked keep-1 refused or collected", func(ctx context.Context) error {
		var p corev1.Pod
		err := s.client.Get(ctx, client.ObjectKeyFromObject(fake), &p)
		if apierrors.IsNotFound(err) || (err == nil && p.UID != fake.UID) {
			t.Logf("the faked keep-1 was removed by the garbage collector (its owner does not exist)")
			return nil
		}
		if err != nil {
			return err
		}
		if c := networksReady(&p); c != nil && c.Reason == "QuotaExceeded" {
			t.Logf("the faked keep-1 waits: %s", c.Message)
			return nil
		}
		return fmt.Errorf("pod keep-1 (faked) not refused yet: %+v", networksReady(&p))
	})
	var held podnetv1.IPClaimList
	if err := s.client.List(ctx, &held, client.MatchingLabels{podnetv1.NamespaceLabel: attackNS, podnetv1.NetworkLabel: "sticky"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range held.Items {
		if c.Spec.Pod.UID == string(fake.UID) {
			t.Fatalf("the faked keep-1 took over IPClaim %s", c.Name)
		}
	}
	_ = m.Delete(ctx, fake)

	// Released after releaseAfter: squat-0 attaches.
	s.waitNet1(t, attackNS, "squat-0", true, 4*time.Minute)
	waited := time.Since(scaled)
	t.Logf("squat-0 attached %v after keep was scaled to zero (releaseAfter %v)", waited.Round(time.Second), stickyReleaseAfter)
	if waited < stickyReleaseAfter {
		t.Fatalf("keep's held addresses were released %v after the scale-down, before releaseAfter %v", waited, stickyReleaseAfter)
	}
	for _, name := range []string{"keep", "squat"} {
		_ = m.Delete(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: name}})
	}
	for _, o := range grant {
		_ = s.client.Delete(ctx, o)
	}
	s.waitPodsGone(t, "squat")
	s.kubectl(t, "", "delete", "networkprofile", "atk-sticky")
}

// stickySet is a StatefulSet of mallory's asking for the sticky network.
func stickySet(name string, replicas int32, node string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: attackNS, Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{podnetv1.NetworksAnnotation: "sticky"}},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"kubernetes.io/hostname": node}, TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "86400"}}}}}}}
}

// waitStickyPods waits for n Ready pods of StatefulSet app on node and
// returns each one's net1 address and MAC.
func (s *suite) waitStickyPods(t *testing.T, app string, n int, node string) map[string]string {
	t.Helper()
	var out map[string]string
	eventually(t, 4*time.Minute, fmt.Sprintf("%d Ready pods of %s on %s", n, app, node), func(ctx context.Context) error {
		var list corev1.PodList
		if err := s.client.List(ctx, &list, client.InNamespace(attackNS), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		out = map[string]string{}
		for _, p := range list.Items {
			if p.DeletionTimestamp != nil || p.Spec.NodeName != node || !ready(p) {
				return fmt.Errorf("pod %s on %q not Ready yet", p.Name, p.Spec.NodeName)
			}
			st, err := statusOf(p)
			if err != nil {
				return err
			}
			mac, err := net1MAC(p)
			if err != nil {
				return err
			}
			said := fmt.Sprintf("%v %s", sortedCopy(ipsOf(st, "net1")), mac)
			// What the pod's net1 has, read inside the pod: the status
			// only says what the agent reported.
			has, err := s.net1Inside(attackNS, p.Name)
			if err != nil {
				return err
			}
			if has != said {
				return fmt.Errorf("pod %s: net1 has %q inside, its network-status says %q", p.Name, has, said)
			}
			out[p.Name] = has
		}
		if len(out) != n {
			return fmt.Errorf("%d pods", len(out))
		}
		return nil
	})
	return out
}

// sameAddresses fails the test unless every pod has what it had before.
func (s *suite) sameAddresses(t *testing.T, before, after map[string]string, when string) {
	t.Helper()
	for pod, was := range before {
		if after[pod] != was {
			t.Errorf("%s: pod %s has %q, had %q", when, pod, after[pod], was)
		}
	}
	t.Logf("%s: %v", when, after)
}

// waitPodsGone waits until no pod of app is left.
func (s *suite) waitPodsGone(t *testing.T, app string) {
	t.Helper()
	eventually(t, 3*time.Minute, "pods of "+app+" gone", func(ctx context.Context) error {
		var list corev1.PodList
		if err := s.client.List(ctx, &list, client.InNamespace(attackNS), client.MatchingLabels{"app": app}); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d pods left", len(list.Items))
		}
		return nil
	})
}

// waitReason waits for pod name (made by a controller, so perhaps not
// there yet) to report reason on its networks-ready condition.
func (s *suite) waitReason(t *testing.T, name, reason string) {
	t.Helper()
	eventually(t, 2*time.Minute, "pod "+name+" reports "+reason, func(ctx context.Context) error {
		var p corev1.Pod
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: attackNS, Name: name}, &p); err != nil {
			return err
		}
		if c := networksReady(&p); c == nil || c.Reason != reason {
			return fmt.Errorf("condition %+v", c)
		}
		return nil
	})
}

// updateSet changes set through c, read afresh: the StatefulSet
// controller writes its status at any time, so an update that lost that
// race is made again on the newer object.
func updateSet(t *testing.T, c client.Client, set *appsv1.StatefulSet, change func(*appsv1.StatefulSet)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(set), set); err != nil {
			return err
		}
		change(set)
		return c.Update(context.Background(), set)
	})
	if err != nil {
		t.Fatalf("statefulset %s/%s: update: %v", set.Namespace, set.Name, err)
	}
}

// net1Inside reads net1's addresses (sorted, without prefix length,
// link-local left out) and MAC
// inside a pod's app container, in the form waitStickyPods compares.
func (s *suite) net1Inside(ns, pod string) (string, error) {
	out, err := s.kubectlErr("", "-n", ns, "exec", pod, "-c", "app", "--", "ip", "-o", "addr", "show", "dev", "net1")
	if err != nil {
		return "", fmt.Errorf("pod %s: ip addr: %w: %s", pod, err, out)
	}
	var ips []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if (f[i] == "inet" || f[i] == "inet6") && !strings.HasPrefix(f[i+1], "fe80:") {
				// network-status lists addresses without their prefix
				// length, as Multus does.
				ip, _, _ := strings.Cut(f[i+1], "/")
				ips = append(ips, ip)
			}
		}
	}
	link, err := s.kubectlErr("", "-n", ns, "exec", pod, "-c", "app", "--", "cat", "/sys/class/net/net1/address")
	if err != nil {
		return "", fmt.Errorf("pod %s: net1's MAC: %w: %s", pod, err, link)
	}
	return fmt.Sprintf("%v %s", sortedCopy(ips), strings.TrimSpace(link)), nil
}

func sortedCopy(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}
