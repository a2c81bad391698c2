package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// macTenantNS is a second tenant, whose pod holds a MAC mallory asks for.
const macTenantNS = "atk-mb"

// The MAC pool's network: a layer-2 bridge whose interfaces get MACs of
// macRange (8 MACs, at most 4 per namespace); tenants may ask for a static
// MAC inside it.
const (
	macRangeStart = "02:00:00:a0:00:00"
	macRangeEnd   = "02:00:00:a0:00:07"
	macProfile    = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-mac}
spec:
  namespaceSelector:
    matchExpressions: [{key: podnet.io/tenant, operator: In, values: [x, mb]}]
  networks:
  - name: macs
    bridge: {name: pnbr-atkm}
    allowStaticMAC: true
    macRange: {rangeStart: "` + macRangeStart + `", rangeEnd: "` + macRangeEnd + `", maxPerNamespace: 4}
`
)

// testMACPool: a Deployment's pods get distinct MACs of the range, on net1
// inside each pod and in network-status, released with the pods; a static
// MAC outside the range is refused at admission; a MAC another namespace's
// pod holds is refused by the agent without naming that pod.
func (s *suite) testMACPool(t *testing.T, m client.Client) {
	s.kubectl(t, "", "create", "namespace", macTenantNS)
	s.kubectl(t, "", "label", "namespace", macTenantNS, podnetv1.EnabledLabel+"=true", "podnet.io/tenant=mb")
	s.apply(t, macProfile)
	s.waitWebhookOffers(t, attackNS, "macs", `"start":"`+macRangeStart+`"`)
	t.Run("DeploymentGetsDistinctMACsFromTheRange", s.testMACDeployment)
	t.Run("StaticMACOutsideTheRange", func(t *testing.T) { s.testMACOutsideRange(t, m) })
	t.Run("MACHeldByAnotherNamespace", func(t *testing.T) { s.testMACOfAnotherNamespace(t, m) })
	s.kubectl(t, "", "delete", "networkprofile", "atk-mac")
	s.kubectl(t, "", "delete", "namespace", macTenantNS, "--wait=false")
}

func (s *suite) testMACDeployment(t *testing.T) {
	s.apply(t, fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: macs, namespace: %s}
spec:
  replicas: 3
  selector: {matchLabels: {app: macs}}
  template:
    metadata:
      labels: {app: macs}
      annotations: {%s: macs}
    spec:
      nodeSelector: {kubernetes.io/hostname: %s}
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: localhost/podnet/busybox:dev
        imagePullPolicy: Never
        command: ["sleep", "86400"]
`, attackNS, podnetv1.NetworksAnnotation, node1))
	var macs map[string]string
	eventually(t, 3*time.Minute, "3 Ready pods with net1 MACs of the range", func(ctx context.Context) error {
		var err error
		macs, err = s.macsOfApp(ctx, attackNS, "macs", 3)
		return err
	})
	seen := map[string]string{}
	for pod, mac := range macs {
		if prev, dup := seen[mac]; dup {
			t.Errorf("MAC %s on net1 of %s and %s", mac, prev, pod)
		}
		seen[mac] = pod
		if mac < macRangeStart || mac > macRangeEnd {
			t.Errorf("pod %s: MAC %s outside %s-%s", pod, mac, macRangeStart, macRangeEnd)
		}
		inside, err := s.kubectlErr("", "-n", attackNS, "exec", pod, "-c", "app", "--", "cat", "/sys/class/net/net1/address")
		if err != nil || strings.TrimSpace(inside) != mac {
			t.Errorf("pod %s: net1 inside the pod has MAC %q (%v), network-status says %s", pod, strings.TrimSpace(inside), err, mac)
		}
		var claim podnetv1.MACClaim
		name := strings.ReplaceAll(mac, ":", "-")
		if err := s.client.Get(context.Background(), client.ObjectKey{Name: name}, &claim); err != nil || claim.Spec.Pod.Name != pod {
			t.Errorf("MACClaim %s: %+v (%v), want it held by %s", name, claim.Spec.Pod, err, pod)
		}
	}
	t.Logf("MACs on net1: %v", macs)
	s.kubectl(t, "", "-n", attackNS, "delete", "deployment", "macs")
	eventually(t, 2*time.Minute, "the Deployment's MAC claims released", func(ctx context.Context) error {
		var list podnetv1.MACClaimList
		if err := s.client.List(ctx, &list, client.MatchingLabels{podnetv1.NamespaceLabel: attackNS, podnetv1.NetworkLabel: "macs"}); err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d MAC claims left, the first %s of pod %s", len(list.Items), list.Items[0].Name, list.Items[0].Spec.Pod.Name)
		}
		return nil
	})
}

// macsOfApp returns the net1 MAC of each of n Ready pods of app, from
// their network-status.
func (s *suite) macsOfApp(ctx context.Context, ns, app string, n int) (map[string]string, error) {
	var list corev1.PodList
	if err := s.client.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if !ready(p) {
			return nil, fmt.Errorf("pod %s not Ready", p.Name)
		}
		mac, err := net1MAC(p)
		if err != nil {
			return nil, err
		}
		out[p.Name] = mac
	}
	if len(out) != n {
		return nil, fmt.Errorf("%d pods", len(out))
	}
	return out, nil
}

// net1MAC reads net1's MAC from the pod's network-status.
func net1MAC(p corev1.Pod) (string, error) {
	var st []struct {
		Interface string `json:"interface"`
		MAC       string `json:"mac"`
	}
	if err := json.Unmarshal([]byte(p.Annotations[podnetv1.NetworkStatusAnnotation]), &st); err != nil {
		return "", fmt.Errorf("pod %s: network-status: %w", p.Name, err)
	}
	for _, e := range st {
		if e.Interface == "net1" && e.MAC != "" {
			return e.MAC, nil
		}
	}
	return "", fmt.Errorf("pod %s: no net1 MAC in network-status", p.Name)
}

// testMACOutsideRange: mallory asks for a static MAC outside the range;
// the webhook refuses the pod, naming the field and the range.
func (s *suite) testMACOutsideRange(t *testing.T, m client.Client) {
	p := attackPod("mac-outside", attackNS, map[string]string{podnetv1.NetworksAnnotation: `[{"name":"macs","mac":"02:00:00:b0:00:01"}]`})
	err := m.Create(context.Background(), p)
	if err == nil {
		t.Fatal("a pod asking for a static MAC outside the range was admitted")
	}
	for _, want := range []string{"mac", "02:00:00:b0:00:01", "outside the macRange " + macRangeStart + "-" + macRangeEnd} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("denial %q does not say %q", err, want)
		}
	}
	t.Logf("denied: %v", err)
}

// testMACOfAnotherNamespace: a pod of another tenant holds a static MAC;
// mallory's pod asking for the same MAC is admitted (the webhook reads no
// claims) but gets no net1: its condition says a pod of another namespace
// holds it and names the MACClaim (the MAC itself), never that pod or its
// namespace; nothing is attached and its app does not start.
func (s *suite) testMACOfAnotherNamespace(t *testing.T, m client.Client) {
	const mac = "02:00:00:a0:00:05"
	ann := map[string]string{podnetv1.NetworksAnnotation: `[{"name":"macs","mac":"` + mac + `"}]`}
	ps := &podSet{t: t, admin: s.client}
	holder := attackPod("mac-holder", macTenantNS, ann)
	if err := s.client.Create(context.Background(), holder); err != nil {
		t.Fatal(err)
	}
	ps.pods = append(ps.pods, client.ObjectKeyFromObject(holder))
	if got, err := net1MAC(*s.waitNet1(t, macTenantNS, "mac-holder", true, 3*time.Minute)); err != nil || got != mac {
		t.Fatalf("holder's net1 MAC %q (%v), want %s", got, err, mac)
	}
	squat := attackPod("mac-squat", attackNS, ann)
	if err := m.Create(context.Background(), squat); err != nil {
		t.Fatal(err)
	}
	ps.pods = append(ps.pods, client.ObjectKeyFromObject(squat))
	s.waitCondition(t, attackNS, "mac-squat", podnetv1.ReasonIPAMFailed)
	msg := networksReady(s.getPod(t, attackNS, "mac-squat")).Message
	if !strings.Contains(msg, "a pod of another namespace") || !strings.Contains(msg, "02-00-00-a0-00-05") {
		t.Errorf("condition %q does not say a pod of another namespace holds MACClaim 02-00-00-a0-00-05", msg)
	}
	if strings.Contains(msg, "mac-holder") || strings.Contains(msg, macTenantNS) {
		t.Errorf("condition %q names the other tenant's pod or namespace", msg)
	}
	// Nothing attached: no net1 in its status, and its app never started
	// (it waits behind podnet's init container).
	squatted := s.getPod(t, attackNS, "mac-squat")
	if got, err := net1MAC(*squatted); err == nil {
		t.Errorf("mac-squat reports net1 with MAC %s", got)
	}
	for _, c := range squatted.Status.ContainerStatuses {
		if c.State.Running != nil {
			t.Errorf("container %s of mac-squat runs without its networks", c.Name)
		}
	}
	if got, err := net1MAC(*s.getPod(t, macTenantNS, "mac-holder")); err != nil || got != mac {
		t.Errorf("holder's net1 MAC now %q (%v), want %s", got, err, mac)
	}
	ps.deleteAll()
}
