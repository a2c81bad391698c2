package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
)

// TestRootE2EHoldAuto: on containerd 2 with NRI's default validator and
// podnet deployed as by default (--hold-pods=auto, no component), the
// agent probes its runtime and labels its Node hold.podnet.io/nri=enforced,
// the controller writes the choice nri on podnet-hold-choice, and a new
// podnet pod is held by NRI: no init container, NRI's required-plugins
// annotation, its app's first command sees net1. So is a pod whose only
// network comes through a ResourceClaimTemplate (the DRA path on
// containerd 2): the webhook reads its template, holds it with NRI and
// drops its NET_RAW, the agent attaches the claim's interface at sandbox
// setup, and the app's first command sees dra1.
func TestRootE2EHoldAuto(t *testing.T) {
	start := time.Now()
	// First of the NRI cluster's chain (then TestRootE2EAttachWithNRI
	// and TestRootE2ENRIFaults, after a deploy with another hold mode).
	s := setUpAt(t, nriShape, first, withDRA)
	t.Logf("cluster up and podnet installed with --hold-pods=auto in %s", time.Since(start).Round(time.Second))
	node := nriCluster + "-n1"
	s.testAdmin(t)
	eventually(t, 2*time.Minute, "the node reported NRI enforced", func(ctx context.Context) error {
		var n corev1.Node
		if err := s.client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
			return err
		}
		if got := n.Labels[podnetv1.NodeHoldNRILabel]; got != podnetv1.NodeHoldNRIEnforced {
			return fmt.Errorf("node %s: %s=%q", node, podnetv1.NodeHoldNRILabel, got)
		}
		return nil
	})
	eventually(t, time.Minute, "the controller chose nri", func(ctx context.Context) error {
		var cm corev1.ConfigMap
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: "podnet-system", Name: podnetv1.HoldChoiceConfigMap}, &cm); err != nil {
			return err
		}
		if got := cm.Annotations[podnetv1.HoldChoiceAnnotation]; got != string(podnetv1.HoldNRI) {
			return fmt.Errorf("choice %v", cm.Annotations)
		}
		return nil
	})
	// The webhook's cache follows the ConfigMap within moments: a pod
	// admitted before that is held by the wait container, and the next
	// deployment is tried.
	app := ""
	for try := 1; app == ""; try++ {
		name := fmt.Sprintf("auto-held-%d", try)
		s.apply(t, firstCommandDeployment(t, name, node, "data"))
		var p corev1.Pod
		eventually(t, time.Minute, name+"'s pod", func(ctx context.Context) (err error) {
			p, err = s.onePod(ctx, name)
			return err
		})
		if len(p.Spec.InitContainers) == 0 && p.Annotations[podnetv1.NRIRequiredPluginsAnnotation] == podnetv1.NRIRequiredPluginsValue {
			app = name
			break
		}
		if try == 5 {
			t.Fatalf("pod %s: init containers %d, %s=%q; want NRI's hold", p.Name, len(p.Spec.InitContainers), podnetv1.NRIRequiredPluginsAnnotation, p.Annotations[podnetv1.NRIRequiredPluginsAnnotation])
		}
		s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", name, "--wait=false")
	}
	p := s.waitPodsWith(t, app, 1, "net1")[0]
	s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
	s.testClaimHeldByNRI(t)
}

// testClaimHeldByNRI: a Deployment whose pod asks for its network only
// through a ResourceClaimTemplate, and leaves NET_RAW to the webhook.
func (s *suite) testClaimHeldByNRI(t *testing.T) {
	s.apply(t, draProfile)
	class, err := podnetv1.DeviceClassName(draProfileName, draNetwork)
	if err != nil {
		t.Fatal(err)
	}
	d := draDeployment("auto-dra", class)
	for old, repl := range map[string]string{
		`command: ["sleep", "86400"]`:                        fmt.Sprintf("command: [\"sh\", \"-c\", %q]", strings.NewReplacer("net1", "dra1", "NET1", "DRA1").Replace(firstCommand)),
		`securityContext: {capabilities: {drop: [NET_RAW]}}`: "",
	} {
		if !strings.Contains(d, old) {
			t.Fatalf("draDeployment() no longer has %s", old)
		}
		d = strings.Replace(d, old, repl, 1)
	}
	s.apply(t, d)
	s.waitReady(t, "auto-dra")
	p, err := s.onePod(context.Background(), "auto-dra")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.InitContainers) != 0 || p.Annotations[podnetv1.NRIRequiredPluginsAnnotation] != podnetv1.NRIRequiredPluginsValue {
		t.Errorf("claim pod %s: init containers %d, %s=%q; want NRI's hold", p.Name, len(p.Spec.InitContainers), podnetv1.NRIRequiredPluginsAnnotation, p.Annotations[podnetv1.NRIRequiredPluginsAnnotation])
	}
	if sc := p.Spec.Containers[0].SecurityContext; sc == nil || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "NET_RAW") {
		t.Errorf("claim pod %s: app security context %+v, want NET_RAW dropped by the webhook", p.Name, sc)
	}
	s.checkFirstCommand(t, p.Name, "FIRST-DRA1-PRESENT")
}

// testDefaultHold: podnet as installed by default (--hold-pods=auto) on a
// cluster whose runtimes cannot enforce NRI's hold — containerd 1.6, which
// has no NRI (each agent's node socket stays unserved), or containerd 2
// without NRI's default validator — holds pods with the wait init
// container: every Node reports that it does not enforce NRI, the
// controller's choice says so, and a new podnet pod gets the wait
// container and no required-plugins annotation.
func (s *suite) testDefaultHold(t *testing.T) {
	want := podnetv1.NodeHoldNRIUnknown // no NRI: not connected within 30 s
	if nodeRuntime == localcluster.RuntimeContainerd2 {
		want = podnetv1.NodeHoldNRIUnenforced // NRI on, its validator off
	}
	for _, node := range []string{node1, node2} {
		eventually(t, 2*time.Minute, node+" reported its NRI hold", func(ctx context.Context) error {
			var n corev1.Node
			if err := s.client.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				return err
			}
			if got := n.Labels[podnetv1.NodeHoldNRILabel]; got != want {
				return fmt.Errorf("node %s: %s=%q, want %q", node, podnetv1.NodeHoldNRILabel, got, want)
			}
			return nil
		})
	}
	eventually(t, time.Minute, "the controller chose the wait container", func(ctx context.Context) error {
		var cm corev1.ConfigMap
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: "podnet-system", Name: podnetv1.HoldChoiceConfigMap}, &cm); err != nil {
			return err
		}
		a := cm.Annotations
		if a[podnetv1.HoldChoiceAnnotation] != string(podnetv1.HoldWaitInitContainer) || a[podnetv1.HoldChoiceNodesAnnotation] != "2" || a[podnetv1.HoldChoiceEnforcedAnnotation] != "0" {
			return fmt.Errorf("choice %v, want %s of 2 nodes, 0 enforced", a, podnetv1.HoldWaitInitContainer)
		}
		return nil
	})
	s.apply(t, firstCommandDeployment(t, "default-held", node1, "data"))
	p := s.waitPodsWith(t, "default-held", 1, "net1")[0]
	if !slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == podnetv1.WaitContainerName }) {
		t.Errorf("pod %s: init containers %v, want %s", p.Name, p.Spec.InitContainers, podnetv1.WaitContainerName)
	}
	if v, ok := p.Annotations[podnetv1.NRIRequiredPluginsAnnotation]; ok {
		t.Errorf("pod %s: %s=%q, want none", p.Name, podnetv1.NRIRequiredPluginsAnnotation, v)
	}
	s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "default-held")
}
