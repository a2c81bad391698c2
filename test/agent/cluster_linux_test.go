package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/test/testenv"
)

// TestRootAgentOnCluster runs the agent binary for the node of a real local
// cluster (kubelet, containerd, scheduler) and a pod with the wait init
// container from the agent image: the app's first command must already
// see both interfaces, their addresses and the route, and the pod turns
// Ready through the readiness gate. The test signs the approval and adds
// the readiness gate and init container as the webhook does. Deleting the
// pod (gracefully, through the kubelet) leaves nothing on the node.
func TestRootAgentOnCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestRootAgentOnCluster runs a local cluster: run it as root")
	}
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	name := "pnag" + strings.ToLower(rand.Text()[:5])
	c, err := localcluster.Up(ctx, localcluster.Options{Name: name, Root: root})
	if err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("cluster down: %v", err)
		}
		os.RemoveAll(c.Dir)
	})
	testenv.TearDownBeforeTimeout(t, func() { _ = c.Down(context.Background()) })
	node := c.Nodes[0]

	// Images: busybox for the app, the agent image for the wait container.
	dir := t.TempDir()
	tarballs, err := image.EnsureTestImages(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range image.AgentCommands {
		if err := image.BuildGoBinary(ctx, root, pkg, filepath.Join(dir, filepath.Base(pkg))); err != nil {
			t.Fatal(err)
		}
	}
	const tag = "e2e"
	built, err := image.WriteSpecs(dir, image.AgentSpec(dir, tag))
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range []string{tarballs[image.BusyboxImage], built[image.Ref(image.AgentName, tag)]} {
		if err := c.ImportImage(ctx, tb); err != nil {
			t.Fatal(err)
		}
	}

	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "deploy", "crd")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	if err := cl.Create(ctx, testProfile()); err != nil {
		t.Fatal(err)
	}
	priv, pub := filepath.Join(dir, "approval.key"), filepath.Join(dir, "approval.pub")
	if err := certs.GenerateKeyPair(priv, pub); err != nil {
		t.Fatal(err)
	}
	signer, err := certs.LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}

	// The agent runs for the cluster's node: its node side is the node's
	// network namespace, its runtime the node's containerd.
	var log bytes.Buffer
	agent := exec.Command(filepath.Join(dir, "podnet-agent"),
		"--kubeconfig", c.Kubeconfig, "--node-name", node.Name,
		"--cri-endpoint", "unix://"+node.CRISocket, "--public-key", pub,
		"--host-netns", node.NetNS, "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	agent.Stdout, agent.Stderr = &log, &log
	testenv.StartProcess(t, agent, 20*time.Second, func() {
		t.Logf("podnet-agent log tail:\n%s", testenv.Tail(log.String(), 6000))
	})

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	ifcs := []v1alpha1.ApprovedInterface{data, storage}
	req := requestOf(ifcs)
	payload, sig, err := approval.Sign(signer, &v1alpha1.Approval{
		IssuedAt:  metav1.NewTime(time.Now().Truncate(time.Second)),
		Namespace: "tenant", ServiceAccount: v1alpha1.DefaultServiceAccount, RequestHash: approval.HashRequest(req),
		Profiles: []v1alpha1.ProfileRef{{Name: "test", Generation: 1}}, Interfaces: ifcs,
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "app", Annotations: map[string]string{
			v1alpha1.NetworksAnnotation: req, v1alpha1.ApprovedAnnotation: payload, v1alpha1.ApprovedSignatureAnnotation: sig,
		}},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: v1alpha1.NetworksReadyCondition}},
			InitContainers: []corev1.Container{{
				Name: v1alpha1.WaitContainerName, Image: image.Ref(image.AgentName, tag), ImagePullPolicy: corev1.PullNever,
				Command: []string{image.AgentBinary}, Args: []string{"wait", "--interfaces", "net1,net2", "--timeout", "2m"},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Containers: []corev1.Container{{
				Name: "app", Image: image.BusyboxImage, ImagePullPolicy: corev1.PullNever, SecurityContext: dropsNetRaw(),
				// The app's very first command shows what it started with.
				Command: []string{"sh", "-c", "ip -o addr show; ip route; echo app-started; exec sleep 3600"},
			}},
			TerminationGracePeriodSeconds: ptr.To[int64](2),
		},
	}
	// The namespace's default service account comes from the controller
	// manager a moment after the namespace.
	testenv.Eventually(t, time.Minute, "create pod tenant/app", func(ctx context.Context) error {
		return cl.Create(ctx, pod.DeepCopy())
	})
	testenv.Eventually(t, 3*time.Minute, "pod tenant/app Ready", func(ctx context.Context) error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("phase %s, conditions %+v", pod.Status.Phase, pod.Status.Conditions)
	})
	if cond := findPodCondition(pod, v1alpha1.NetworksReadyCondition); cond == nil || cond.Status != corev1.ConditionTrue {
		t.Fatalf("pod Ready without %s True: %+v", v1alpha1.NetworksReadyCondition, pod.Status.Conditions)
	}
	if s := pod.Status.InitContainerStatuses; len(s) != 1 || s[0].State.Terminated == nil || s[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("wait init container status %+v, want exited 0", s)
	}
	out, err := exec.CommandContext(ctx, "kubectl", "--kubeconfig", c.Kubeconfig, "-n", "tenant", "logs", "app", "-c", "app").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl logs: %v\n%s", err, out)
	}
	lines := strings.Split(string(out), "\n")
	for _, want := range [][]string{{"net1", "inet 192.168.100."}, {"net2", "inet 192.168.200.20/24"}, {"10.50.0.0/16 via 192.168.100.1", "dev net1"}, {"app-started"}} {
		if !slices.ContainsFunc(lines, func(l string) bool { return containsAll(l, want) }) {
			t.Errorf("no line of the app's first output has %q:\n%s", want, out)
		}
	}

	// Graceful deletion through the kubelet: nothing stays on the node or
	// in the API.
	uid := pod.UID
	if err := cl.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	host := handleAt(t, node.NetNS)
	testenv.Eventually(t, 2*time.Minute, "pod gone with its node links and claims", func(ctx context.Context) error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); err == nil {
			return fmt.Errorf("pod still there")
		}
		if n := nodeLinksOf(t, host, uid); len(n) != 0 {
			return fmt.Errorf("node links %v", n)
		}
		var claims v1alpha1.IPClaimList
		if err := cl.List(ctx, &claims, client.MatchingLabels{v1alpha1.PodUIDLabel: string(uid)}); err != nil || len(claims.Items) != 0 {
			return fmt.Errorf("claims %d %v", len(claims.Items), err)
		}
		for _, br := range []string{"pnbr-data", "pnbr-stor"} {
			if _, err := host.LinkByName(br); err == nil {
				return fmt.Errorf("bridge %s still there", br)
			}
		}
		return nil
	})
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func findPodCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}
