package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// The attacks run as the tenant "mallory": full rights on pods and their
// subresources in her namespaces and, as a namespace owner often has,
// update rights on her own Namespace object, but no cluster rights.
const (
	attackNS    = "atk-x" // opted in, selected by profile "atk"
	attackOffNS = "atk-y" // not opted in
	mallory     = "mallory"
	// revocationDeadline is what the README promises: a revoked grant's
	// interfaces are gone from running pods within 10 s.
	revocationDeadline = 10 * time.Second
)

const attackProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: x}
  networks:
  - name: data
    bridge: {name: pnbr-atk}
    ipam: {pools: ["192.168.60.0/24"]}
---
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-other}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: other}
  networks:
  - name: secret
    bridge: {name: pnbr-atks}
`

// testAttacks tries what a hostile tenant would, with the real components
// on the two-node cluster, and checks each attempt is refused or undone.
func (s *suite) testAttacks(t *testing.T) {
	ctx := context.Background()
	s.setUpAttacks(t)
	m := s.as(t, rest.ImpersonationConfig{UserName: mallory, Groups: []string{"system:authenticated"}})

	t.Run("DryRunMintsNoApproval", func(t *testing.T) {
		p := attackPod("dry", attackNS, nil)
		if err := m.Create(ctx, p, client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		// It shows the approval the tenant would get, unsigned: nothing an
		// agent accepts.
		if _, ok := p.Annotations[podnetv1.ApprovedSignatureAnnotation]; ok {
			t.Fatalf("a server-side dry run returned a signed approval: %v", p.Annotations)
		}
	})

	victim := attackPod("victim", attackNS, nil)
	if err := m.Create(ctx, victim); err != nil {
		t.Fatal(err)
	}
	victim = s.waitNet1(t, attackNS, "victim", true, 3*time.Minute)
	stored := map[string]string{}
	for _, k := range []string{podnetv1.NetworksAnnotation, podnetv1.ApprovedAnnotation, podnetv1.ApprovedSignatureAnnotation} {
		stored[k] = victim.Annotations[k]
	}

	t.Run("CloneOntoSecondPodIsReissued", func(t *testing.T) {
		// In an opted-in namespace the webhook judges the clone (here, a
		// pod of another service account) and signs its own approval; the
		// stored one does not travel.
		clone := attackPod("clone", attackNS, stored)
		clone.Spec.ServiceAccountName = "other"
		if err := m.Create(ctx, clone); err != nil {
			t.Fatal(err)
		}
		clone = s.waitNet1(t, attackNS, "clone", true, 3*time.Minute)
		if clone.Annotations[podnetv1.ApprovedAnnotation] == stored[podnetv1.ApprovedAnnotation] {
			t.Fatal("the clone carries the victim's approval")
		}
	})

	t.Run("CopyToAnotherNamespace", func(t *testing.T) {
		p := attackPod("copy", attackOffNS, stored)
		if err := m.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		s.waitCondition(t, attackOffNS, "copy", "InvalidApproval")
		s.noNet1(t, attackOffNS, "copy")
	})

	t.Run("StatusSubresourceWrite", func(t *testing.T) {
		p := s.getPod(t, attackOffNS, "copy")
		err := m.Status().Patch(ctx, p, rawPatch(`{"metadata":{"annotations":{"podnet.io/network-status":"[]","podnet.io/approved":"{}"}}}`))
		wantPolicyRefusal(t, err, "pods/status")
	})

	t.Run("BindingSubresourceWrite", func(t *testing.T) {
		p := attackPod("unscheduled", attackOffNS, nil)
		p.Spec.SchedulerName = "nobody"
		p.Spec.NodeSelector = nil
		if err := m.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: attackOffNS, Name: p.Name, Annotations: stored},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node1},
		}
		wantPolicyRefusal(t, m.SubResource("binding").Create(ctx, p, b), "pods/binding")
	})

	t.Run("EphemeralContainerWrite", func(t *testing.T) {
		// The API server drops annotation edits on this subresource
		// before admission; the container it would add keeps the
		// runtime's NET_RAW, which podnet's policy refuses.
		err := s.updateEphemeral(t, m, attackOffNS, "copy", func(p *corev1.Pod) {
			p.Annotations[podnetv1.ApprovedAnnotation] = "{}"
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "dbg", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"}}}}
		})
		wantPolicyRefusal(t, err, "must drop NET_RAW")
		if got := s.getPod(t, attackOffNS, "copy"); got.Annotations[podnetv1.ApprovedAnnotation] == "{}" || len(got.Spec.EphemeralContainers) != 0 {
			t.Fatalf("written through pods/ephemeralcontainers: annotations %v, ephemeral containers %d", got.Annotations, len(got.Spec.EphemeralContainers))
		}
	})

	t.Run("EphemeralContainerWithNetAdmin", func(t *testing.T) {
		err := s.updateEphemeral(t, m, attackNS, "victim", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "spoof", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever, Command: []string{"sleep", "3600"},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}}}}
		})
		wantPolicyRefusal(t, err, "may not add NET_ADMIN or NET_RAW")
	})

	t.Run("TenantRelabelsNamespace", func(t *testing.T) {
		for name, patch := range map[string]string{
			"opt out":                    `{"metadata":{"labels":{"podnet.io/enabled":null}}}`,
			"join another profile":       `{"metadata":{"labels":{"podnet.io/tenant":"other"}}}`,
			"opt in the other namespace": `{"metadata":{"labels":{"podnet.io/enabled":"true"}}}`,
		} {
			ns := attackNS
			if strings.HasPrefix(name, "opt in") {
				ns = attackOffNS
			}
			err := m.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, rawPatch(patch))
			if err == nil || !strings.Contains(err.Error(), "podnet-namespace-label-admins") {
				t.Errorf("%s: %v, want a policy refusal", name, err)
			}
		}
	})

	t.Run("OtherNodesAgentPatchesPod", func(t *testing.T) {
		agent := func(node string) client.Client {
			return s.as(t, rest.ImpersonationConfig{UserName: "system:serviceaccount:podnet-system:podnet-agent",
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:podnet-system", "system:authenticated"},
				Extra:  map[string][]string{"authentication.kubernetes.io/node-name": {node}}})
		}
		patch := rawPatch(`{"metadata":{"annotations":{"podnet.io/network-status":"[]"}}}`)
		wantPolicyRefusal(t, agent(node2).Patch(ctx, s.getPod(t, attackNS, "victim"), patch), "own node")
		// The real agents run under this very policy: every pod attached
		// in this suite was patched by its own node's agent.
	})

	t.Run("NodeCompromise", s.testNodeCompromise)
	t.Run("QuotaExhaustion", func(t *testing.T) { s.testQuotaExhaustion(t, m) })
	t.Run("SecondProfileSameNetworkName", func(t *testing.T) { s.testSecondProfileSameNetworkName(t, m) })
	t.Run("QuotaPerAddressSpace", func(t *testing.T) { s.testQuotaSpaces(t, m) })
	t.Run("DefaultNetRaw", func(t *testing.T) { s.testDefaultNetRaw(t, m) })
	t.Run("ApprovalBinding", func(t *testing.T) { s.testBindingAttacks(t, m) })
	t.Run("PortSecurity", s.testPortSecurity)
	t.Run("MACPool", func(t *testing.T) { s.testMACPool(t, m) })
	t.Run("ClonedStaticMAC", func(t *testing.T) { s.testClonedMAC(t, m) })
	t.Run("VRFTable", func(t *testing.T) { s.testVRFAttacks(t, m) })
	t.Run("Tunnels", func(t *testing.T) { s.testTunnels(t, m) })
	t.Run("TunnelVNIShared", func(t *testing.T) { s.testTunnelVNIShared(t, m) })
	t.Run("StatefulSetKeepsAddresses", func(t *testing.T) { s.testStatefulSetKeepsAddresses(t, m) })

	t.Run("ReplayAfterOptOutAndLabelRemoval", func(t *testing.T) {
		s.kubectl(t, "", "label", "namespace", attackNS, podnetv1.EnabledLabel+"-")
		start := time.Now()
		for _, name := range []string{"victim", "clone"} {
			s.waitNet1(t, attackNS, name, false, revocationDeadline)
		}
		t.Logf("opt-in label removed: net1 gone from both pods after %v", time.Since(start).Round(time.Millisecond))
		s.stillRunning(t, victim)
		s.waitCondition(t, attackNS, "victim", "GrantRevoked")
		// The stored approval on a new pod: the webhook no longer sees the
		// namespace, the agent refuses it.
		if err := m.Create(ctx, attackPod("replay", attackNS, stored)); err != nil {
			t.Fatal(err)
		}
		s.waitConditionFalse(t, attackNS, "replay")
		s.noNet1(t, attackNS, "replay")
		s.kubectl(t, "", "label", "namespace", attackNS, podnetv1.EnabledLabel+"=true")
		s.waitNet1(t, attackNS, "victim", true, 2*time.Minute)
	})

	t.Run("ProfileDeleteWithRunningPods", func(t *testing.T) {
		s.kubectl(t, "", "delete", "networkprofile", "atk")
		start := time.Now()
		s.waitNet1(t, attackNS, "victim", false, revocationDeadline)
		t.Logf("profile deleted: net1 gone after %v", time.Since(start).Round(time.Millisecond))
		s.stillRunning(t, victim)
		s.waitCondition(t, attackNS, "victim", "GrantRevoked")
	})

	t.Run("ProfileNarrowedUnderRunningPods", s.testNarrowing)

	t.Run("ServiceAccountsFieldIsGone", func(t *testing.T) {
		_, err := s.kubectlErr(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-sa}
spec:
  namespaceSelector: {}
  serviceAccounts: [cnf]
  networks: [{name: data, bridge: {name: pnbr-atk}}]
`, "apply", "-f", "-")
		if err == nil || !strings.Contains(err.Error(), "serviceAccounts") {
			t.Fatalf("a profile limited by service account was accepted: %v", err)
		}
	})
}

// setUpAttacks creates mallory's namespaces, rights and the profiles, as
// the cluster admin.
func (s *suite) setUpAttacks(t *testing.T) {
	s.kubectl(t, "", "create", "namespace", attackNS)
	s.kubectl(t, "", "label", "namespace", attackNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=x")
	s.kubectl(t, "", "create", "namespace", attackOffNS)
	s.kubectl(t, "", "create", "serviceaccount", "other", "-n", attackNS)
	s.apply(t, attackProfile)
	ctx := context.Background()
	objs := []client.Object{&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "atk-namespace-owner"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "update", "patch"}},
	}}}
	for _, ns := range []string{attackNS, attackOffNS} {
		objs = append(objs,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}, Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods", "pods/status", "pods/binding", "pods/ephemeralcontainers"}, Verbs: []string{"*"}},
			}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "owner"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: mallory}}},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "namespace-owner"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "atk-namespace-owner"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: mallory}}},
		)
	}
	for _, o := range objs {
		if err := s.client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// as is a client impersonating a user.
func (s *suite) as(t *testing.T, who rest.ImpersonationConfig) client.Client {
	t.Helper()
	cfg, err := s.cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate = who
	c, err := client.New(cfg, client.Options{Scheme: s.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// attackPod asks for network "data" on node1 unless annotations say
// otherwise.
func attackPod(name, ns string, annotations map[string]string) *corev1.Pod {
	ann := map[string]string{podnetv1.NetworksAnnotation: "data"}
	for k, v := range annotations {
		ann[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: corev1.PodSpec{
			NodeSelector:                  map[string]string{"kubernetes.io/hostname": node1},
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sleep", "86400"}}},
		},
	}
}

func rawPatch(p string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(p)) }

func (s *suite) getPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	var p corev1.Pod
	if err := s.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// waitNet1 waits until net1 exists (or not) inside the pod, as the pod's
// own `ip link` sees it, and returns the pod.
func (s *suite) waitNet1(t *testing.T, ns, name string, present bool, within time.Duration) *corev1.Pod {
	t.Helper()
	eventually(t, within, fmt.Sprintf("net1 in pod %s/%s present=%v", ns, name, present), func(ctx context.Context) error {
		out, err := s.kubectlErr("", "-n", ns, "exec", name, "-c", "app", "--", "ip", "-o", "link")
		if err != nil {
			return err
		}
		if strings.Contains(out, " net1") != present {
			return fmt.Errorf("links: %s", out)
		}
		return nil
	})
	return s.getPod(t, ns, name)
}

// noNet1 checks, once the agent has decided, that the pod has no net1.
func (s *suite) noNet1(t *testing.T, ns, name string) {
	t.Helper()
	s.waitNet1(t, ns, name, false, time.Minute)
}

func (s *suite) waitCondition(t *testing.T, ns, name, reason string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("pod %s/%s condition %s", ns, name, reason), func(ctx context.Context) error {
		c := networksReady(s.getPod(t, ns, name))
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != reason {
			return fmt.Errorf("condition %+v", c)
		}
		t.Logf("pod %s/%s: %s: %s", ns, name, c.Reason, c.Message)
		return nil
	})
}

func (s *suite) waitConditionFalse(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("pod %s/%s refused", ns, name), func(ctx context.Context) error {
		c := networksReady(s.getPod(t, ns, name))
		if c == nil || c.Status != corev1.ConditionFalse {
			return fmt.Errorf("condition %+v", c)
		}
		t.Logf("pod %s/%s: %s: %s", ns, name, c.Reason, c.Message)
		return nil
	})
}

func networksReady(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == podnetv1.NetworksReadyCondition {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// stillRunning checks a pod survived a revocation: same UID, Running, its
// container never restarted.
func (s *suite) stillRunning(t *testing.T, was *corev1.Pod) {
	t.Helper()
	// The app may run before the kubelet's next status update says so:
	// wait for the phase, never for another pod of that name.
	var p *corev1.Pod
	eventually(t, time.Minute, fmt.Sprintf("pod %s/%s Running", was.Namespace, was.Name), func(ctx context.Context) error {
		p = s.getPod(t, was.Namespace, was.Name)
		if p.UID != was.UID {
			t.Fatalf("pod %s/%s: uid %s, want %s: it was re-created", p.Namespace, p.Name, p.UID, was.UID)
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	for _, c := range p.Status.ContainerStatuses {
		if c.RestartCount != 0 || c.State.Running == nil {
			t.Fatalf("container %s: restarts %d, state %+v", c.Name, c.RestartCount, c.State)
		}
	}
}

// updateEphemeral writes pod ns/name, changed by change, through the
// ephemeralcontainers subresource as c, and returns the API server's
// answer. The agent writes the pod's status at any time, so a write that
// lost that race is made again on the newer pod.
func (s *suite) updateEphemeral(t *testing.T, c client.Client, ns, name string, change func(*corev1.Pod)) error {
	t.Helper()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := s.getPod(t, ns, name)
		change(p)
		return c.SubResource("ephemeralcontainers").Update(context.Background(), p)
	})
}

func wantPolicyRefusal(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(err.Error(), what) {
		t.Fatalf("%v, want a ValidatingAdmissionPolicy refusal mentioning %q", err, what)
	}
	t.Logf("refused: %v", err)
}
