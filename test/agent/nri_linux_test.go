package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/testenv"
)

// TestRootAgentNRI runs the real agent binary as an NRI plugin of a real
// containerd 2 (its own NRI socket) and plays the kubelet through CRI: a
// podnet pod's container is created only once net1 is in its netns, a pod
// with a forged approval has its containers refused with the reason, one
// whose attach is refused (its namespace not opted in) has its containers
// refused, naming the pod and net1, until the grant comes and the
// interface with it; a plain pod's container is never held; with the
// agent killed, NRI creates the podnet pod's container anyway (NRI alone
// fails open), and a new agent registers afresh.
func TestRootAgentNRI(t *testing.T) {
	w := newWorldWith(t, critest.Options{Runtime: localcluster.RuntimeContainerd2})
	w.ensureNamespace("tenant")
	nriSocket := filepath.Join(filepath.Dir(w.cri.Socket), localcluster.NodeNRISocket)
	agent := w.startAgent("--nri-socket", nriSocket)
	waitNRIConnected(t, agent)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("a podnet pod's container is created with net1 there", func(t *testing.T) {
		pod := w.createPod("tenant", "nri-one", w.approvedAnnotations("tenant", data))
		sb := w.runSandboxOf(ctx, pod)
		if err := w.createContainer(ctx, sb, pod); err != nil {
			t.Fatalf("create container: %v", err)
		}
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] == nil {
			t.Fatalf("pod links %v once its container was created, want net1", keys(links))
		}
		w.waitCondition("tenant", "nri-one", corev1.ConditionTrue, "NetworksAttached", waitFor)
		body := scrape(t, agent.metrics)
		for _, hook := range []string{"RunPodSandbox", "CreateContainer"} {
			if want := fmt.Sprintf("podnet_agent_nri_hook_seconds_count{hook=%q} 1\n", hook); !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("a forged approval's container is refused with the reason", func(t *testing.T) {
		ann := w.approvedAnnotations("tenant", data)
		ann[v1alpha1.ApprovedSignatureAnnotation] = strings.Repeat("A", len(ann[v1alpha1.ApprovedSignatureAnnotation]))
		pod := w.createPod("tenant", "nri-forged", ann)
		sb := w.runSandboxOf(ctx, pod)
		err := w.createContainer(ctx, sb, pod)
		if err == nil || !strings.Contains(err.Error(), "tenant/nri-forged") || !strings.Contains(err.Error(), "approval refused") {
			t.Fatalf("create container of a forged approval: err = %v, want a refusal naming the pod and the approval", err)
		}
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] != nil {
			t.Fatal("net1 built for a forged approval")
		}
	})

	t.Run("refused until the interfaces exist", func(t *testing.T) {
		if err := w.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "later"}}); err != nil {
			t.Fatal(err)
		}
		if err := w.env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "later", Name: v1alpha1.DefaultServiceAccount}}); err != nil {
			t.Fatal(err)
		}
		pod := w.createPod("later", "nri-later", w.approvedAnnotations("later", data))
		sb := w.runSandboxOf(ctx, pod)
		err := w.createContainer(ctx, sb, pod)
		for _, want := range []string{"later/nri-later", "podnet networks not ready", "net1 missing"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("create container of a pod not attached: err = %v, want it to say %q", err, want)
			}
		}
		// Opted in, the agent attaches; the kubelet's next try succeeds.
		var ns corev1.Namespace
		if err := w.env.Client.Get(ctx, client.ObjectKey{Name: "later"}, &ns); err != nil {
			t.Fatal(err)
		}
		ns.Labels = map[string]string{v1alpha1.EnabledLabel: "true"}
		if err := w.env.Client.Update(ctx, &ns); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, waitFor, "nri-later's container created", func(ctx context.Context) error {
			return w.createContainer(ctx, sb, pod)
		})
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] == nil {
			t.Fatalf("pod links %v once its container was created, want net1", keys(links))
		}
	})

	t.Run("a plain pod's container is not held", func(t *testing.T) {
		pod := w.createPod("tenant", "nri-plain", nil)
		sb := w.runSandboxOf(ctx, pod)
		if err := w.createContainer(ctx, sb, pod); err != nil {
			t.Fatalf("create the plain pod's container: %v", err)
		}
	})

	t.Run("the agent killed: NRI fails open; a new agent registers", func(t *testing.T) {
		agent.Stop(t, syscall.SIGKILL, 10*time.Second)
		pod := w.createPod("tenant", "nri-open", w.approvedAnnotations("tenant", data))
		sb := w.runSandboxOf(ctx, pod)
		if err := w.createContainer(ctx, sb, pod); err != nil {
			t.Fatalf("create container with no plugin connected: %v (NRI without a validator creates it)", err)
		}
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] != nil {
			t.Fatalf("net1 exists with the agent down")
		}
		again := w.startAgent("--nri-socket", nriSocket)
		waitNRIConnected(t, again)
		w.waitCondition("tenant", "nri-open", corev1.ConditionTrue, "NetworksAttached", waitFor)
	})
}

// waitNRIConnected waits until the agent reports its NRI registration.
func waitNRIConnected(t *testing.T, a *agentProc) {
	t.Helper()
	waitMetric(t, a.metrics, "podnet_agent_nri_connected 1")
}

// sandboxConfig is what the kubelet sends for the pod: its metadata,
// labels and annotations.
func sandboxConfig(p *corev1.Pod) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:    &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: string(p.UID)},
		Annotations: p.Annotations,
		Labels: map[string]string{
			cri.PodUIDLabel:               string(p.UID),
			"io.kubernetes.pod.name":      p.Name,
			"io.kubernetes.pod.namespace": p.Namespace,
		},
		Linux: &runtimeapi.LinuxPodSandboxConfig{},
	}
}

// runSandboxOf plays the kubelet's RunPodSandbox for the pod.
func (w *world) runSandboxOf(ctx context.Context, p *corev1.Pod) string {
	w.t.Helper()
	resp, err := w.cri.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sandboxConfig(p)})
	if err != nil {
		w.t.Fatalf("run sandbox of %s/%s: %v", p.Namespace, p.Name, err)
	}
	return resp.PodSandboxId
}

// createContainer plays the kubelet's CreateContainer of the pod's app
// (the pause image: the container is never started).
func (w *world) createContainer(ctx context.Context, sandbox string, p *corev1.Pod) error {
	return w.createContainerNamed(ctx, sandbox, p, "app")
}

// createContainerNamed is createContainer of the container name.
func (w *world) createContainerNamed(ctx context.Context, sandbox string, p *corev1.Pod, name string) error {
	_, err := w.cri.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandbox,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: image.PauseImage},
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
		SandboxConfig: sandboxConfig(p),
	})
	return err
}

// TestRootAgentNRIValidator runs the agent as NRI plugin of a containerd
// 2 whose NRI runs its default validator, with pods that require podnet's
// plugin (v1alpha1.NRIRequiredPluginsAnnotation). The plugin refuses a
// pod not attached; a stopped agent is dropped by the runtime after the
// request timeout, and the agent reconnects by itself once it runs again;
// a killed agent's required pods have their containers refused by the
// runtime's validator until a new agent registers. And what the validator
// does not cover in NRI 0.12: the one call that timed out, a
// CreateContainer, counts as processed by the plugin it dropped, so that
// one container is created without its networks.
func TestRootAgentNRIValidator(t *testing.T) {
	w := newWorldWith(t, critest.Options{Runtime: localcluster.RuntimeContainerd2, NRIDefaultValidator: true})
	w.ensureNamespace("tenant")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Not opted in: the agent refuses to attach its pods, so their net1
	// never exists while the test looks.
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "later"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "later", Name: v1alpha1.DefaultServiceAccount}},
	} {
		if err := w.env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	required := func(ann map[string]string) map[string]string {
		ann[v1alpha1.NRIRequiredPluginsAnnotation] = `["` + v1alpha1.NRIPluginName + `"]`
		return ann
	}
	nriSocket := filepath.Join(filepath.Dir(w.cri.Socket), localcluster.NodeNRISocket)
	agent := w.startAgent("--nri-socket", nriSocket)
	waitNRIConnected(t, agent)

	t.Run("the plugin refuses a pod not attached", func(t *testing.T) {
		pod := w.createPod("later", "val-refused", required(w.approvedAnnotations("later", data)))
		err := w.createContainer(ctx, w.runSandboxOf(ctx, pod), pod)
		if err == nil || !strings.Contains(err.Error(), "net1 missing") {
			t.Fatalf("create container: err = %v, want the plugin's refusal naming net1", err)
		}
	})

	t.Run("a hang after RunPodSandbox lets that one container through", func(t *testing.T) {
		pod := w.createPod("later", "val-hung", required(w.approvedAnnotations("later", data)))
		sb := w.runSandboxOf(ctx, pod)
		pid := agent.Cmd.Process.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := true
		defer func() {
			if stopped {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}()
		if err := w.createContainer(ctx, sb, pod); err != nil {
			t.Fatalf("create container while the agent hangs: %v; NRI no longer counts a dropped plugin as having processed the call: the validator covers hangs now", err)
		}
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] != nil {
			t.Fatal("net1 exists in a pod the agent refused")
		}
		// Dropped, the plugin is missing from every later call: refused.
		err := w.createContainerNamed(ctx, sb, pod, "app2")
		if err == nil || !strings.Contains(err.Error(), `required plugin "podnet" not present`) {
			t.Fatalf("second container while the agent hangs: err = %v, want the validator's refusal", err)
		}
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		stopped = false
		// Running again, the agent registers anew by itself: the validator
		// finds the plugin among those that processed a new pod's
		// container. (Its gauge may still say 1 from before the drop.)
		again := w.createPod("tenant", "val-resumed", required(w.approvedAnnotations("tenant", data)))
		sb = w.runSandboxOf(ctx, again)
		testenv.Eventually(t, waitFor, "a required pod's container created once the agent resumed", func(ctx context.Context) error {
			return w.createContainer(ctx, sb, again)
		})
	})

	t.Run("a killed agent's required pods are refused until it is back", func(t *testing.T) {
		agent.Stop(t, syscall.SIGKILL, 10*time.Second)
		pod := w.createPod("tenant", "val-killed", required(w.approvedAnnotations("tenant", data)))
		sb := w.runSandboxOf(ctx, pod)
		err := w.createContainer(ctx, sb, pod)
		if err == nil || !strings.Contains(err.Error(), `required plugin "podnet" not present`) {
			t.Fatalf("create container with the agent killed: err = %v, want the validator's refusal", err)
		}
		waitNRIConnected(t, w.startAgent("--nri-socket", nriSocket))
		testenv.Eventually(t, waitFor, "val-killed's container created", func(ctx context.Context) error {
			return w.createContainer(ctx, sb, pod)
		})
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] == nil {
			t.Fatalf("pod links %v once its container was created, want net1", keys(links))
		}
	})
}
