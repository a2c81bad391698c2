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
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// interface with it; a plain pod's container is never held, nor that of
// a podnet pod held by the wait container (no required-plugins
// annotation); with the
// agent killed, NRI creates the podnet pod's container anyway (NRI alone
// fails open), and a new agent registers afresh.
func TestRootAgentNRI(t *testing.T) {
	w := newWorldWith(t, critest.Options{Runtime: localcluster.RuntimeContainerd2})
	tenant := w.ensureNamespace("tenant")
	nriSocket := filepath.Join(filepath.Dir(w.cri.Socket), localcluster.NodeNRISocket)
	w.ensureNode()
	agent := w.startAgent("--nri-socket", nriSocket)
	waitNRIConnected(t, agent)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The runtime's validator is off: the agent's probe finds so.
	waitMetric(t, agent.metrics, `podnet_agent_nri_validator{result="unenforced"} 1`)
	w.waitNodeHoldLabel(v1alpha1.NodeHoldNRIUnenforced)

	t.Run("a podnet pod's container is created with net1 there", func(t *testing.T) {
		pod := w.createPod(tenant, "nri-one", heldByNRI(w.approvedAnnotations(tenant, data)))
		sb := w.runSandboxOf(ctx, pod)
		if err := w.createContainer(ctx, sb, pod); err != nil {
			t.Fatalf("create container: %v", err)
		}
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] == nil {
			t.Fatalf("pod links %v once its container was created, want net1", keys(links))
		}
		// Attached, and held by NRI on a runtime without its validator:
		// the condition says the hold is not enforced.
		w.waitCondition(tenant, "nri-one", corev1.ConditionTrue, v1alpha1.ReasonHoldNotEnforced, waitFor)
		body := scrape(t, agent.metrics)
		// Each hook ran twice: for the agent's own probe of the runtime
		// (a plain pod to the plugin), then for the pod.
		for _, hook := range []string{"RunPodSandbox", "CreateContainer"} {
			if want := fmt.Sprintf("podnet_agent_nri_hook_seconds_count{hook=%q} 2\n", hook); !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("a forged approval's container is refused with the reason", func(t *testing.T) {
		ann := heldByNRI(w.approvedAnnotations(tenant, data))
		ann[v1alpha1.ApprovedSignatureAnnotation] = strings.Repeat("A", len(ann[v1alpha1.ApprovedSignatureAnnotation]))
		pod := w.createPod(tenant, "nri-forged", ann)
		sb := w.runSandboxOf(ctx, pod)
		err := w.createContainer(ctx, sb, pod)
		if err == nil || !strings.Contains(err.Error(), tenant+"/nri-forged") || !strings.Contains(err.Error(), "approval refused") {
			t.Fatalf("create container of a forged approval: err = %v, want a refusal naming the pod and the approval", err)
		}
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] != nil {
			t.Fatal("net1 built for a forged approval")
		}
	})

	t.Run("refused until the interfaces exist", func(t *testing.T) {
		later := w.uniqueName("later")
		if err := w.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}}); err != nil {
			t.Fatal(err)
		}
		if err := w.env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: later, Name: v1alpha1.DefaultServiceAccount}}); err != nil {
			t.Fatal(err)
		}
		// Held another way (the wait container): NRI creates its container
		// at once, though nothing can be attached yet.
		other := w.createPod(later, "nri-wait-held", w.approvedAnnotations(later, data))
		if err := w.createContainer(ctx, w.runSandboxOf(ctx, other), other); err != nil {
			t.Fatalf("create the container of a pod held by the wait container: %v", err)
		}
		pod := w.createPod(later, "nri-later", heldByNRI(w.approvedAnnotations(later, data)))
		sb := w.runSandboxOf(ctx, pod)
		err := w.createContainer(ctx, sb, pod)
		for _, want := range []string{later + "/nri-later", "podnet networks not ready", "net1 missing"} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("create container of a pod not attached: err = %v, want it to say %q", err, want)
			}
		}
		// Opted in, the agent attaches; the kubelet's next try succeeds.
		var ns corev1.Namespace
		if err := w.env.Client.Get(ctx, client.ObjectKey{Name: later}, &ns); err != nil {
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
		pod := w.createPod(tenant, "nri-plain", nil)
		sb := w.runSandboxOf(ctx, pod)
		if err := w.createContainer(ctx, sb, pod); err != nil {
			t.Fatalf("create the plain pod's container: %v", err)
		}
	})

	t.Run("the agent killed: NRI fails open; a new agent registers and restarts the container", func(t *testing.T) {
		agent.Stop(t, syscall.SIGKILL, 10*time.Second)
		// Held by NRI as the webhook marks it; without the runtime's
		// validator the mark holds nothing.
		pod := w.createPod(tenant, "nri-open", heldByNRI(w.approvedAnnotations(tenant, data)))
		sb := w.runSandboxOf(ctx, pod)
		id, err := w.createContainerID(ctx, sb, pod, "app", 0)
		if err != nil {
			t.Fatalf("create container with no plugin connected: %v (NRI without a validator creates it)", err)
		}
		w.startContainer(ctx, id)
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] != nil {
			t.Fatalf("net1 exists with the agent down")
		}
		again := w.startAgent("--nri-socket", nriSocket)
		waitNRIConnected(t, again)
		// Attached, but nothing held the pod: the runtime has no validator.
		w.waitCondition(tenant, "nri-open", corev1.ConditionTrue, v1alpha1.ReasonHoldNotEnforced, waitFor)
		w.waitStoppedByTheAgent(ctx, sb, pod, id)
		waitMetric(t, again.metrics, "podnet_agent_containers_restarted_total 1")
	})
}

// optIn labels the namespace podnet-enabled.
func (w *world) optIn(ctx context.Context, name string) {
	w.t.Helper()
	var ns corev1.Namespace
	if err := w.env.Client.Get(ctx, client.ObjectKey{Name: name}, &ns); err != nil {
		w.t.Fatal(err)
	}
	ns.Labels = map[string]string{v1alpha1.EnabledLabel: "true"}
	if err := w.env.Client.Update(ctx, &ns); err != nil {
		w.t.Fatal(err)
	}
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
	_, err := w.createContainerID(ctx, sandbox, p, name, 0)
	return err
}

// createContainerID plays the kubelet's CreateContainer of the pod's
// container name, attempt attempt, with the kubelet's labels; it returns
// the container's id.
func (w *world) createContainerID(ctx context.Context, sandbox string, p *corev1.Pod, name string, attempt uint32) (string, error) {
	resp, err := w.cri.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandbox,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: attempt},
			Image:    &runtimeapi.ImageSpec{Image: image.PauseImage, UserSpecifiedImage: image.PauseImage},
			Labels:   map[string]string{cri.PodUIDLabel: string(p.UID), "io.kubernetes.container.name": name},
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
		SandboxConfig: sandboxConfig(p),
	})
	return resp.GetContainerId(), err
}

// startContainer plays the kubelet's StartContainer.
func (w *world) startContainer(ctx context.Context, id string) {
	w.t.Helper()
	if _, err := w.cri.Runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		w.t.Fatalf("start container %s: %v", id, err)
	}
}

// containerState is the runtime's state of the container.
func (w *world) containerState(ctx context.Context, id string) runtimeapi.ContainerState {
	w.t.Helper()
	st, err := w.cri.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		w.t.Fatalf("status of container %s: %v", id, err)
	}
	return st.GetStatus().GetState()
}

// waitStoppedByTheAgent waits until the agent stopped the running
// container id of pod, which started before the pod's networks, and then
// plays the kubelet's restart: the new container is created (the plugin
// admits it) with net1 in the pod's netns.
func (w *world) waitStoppedByTheAgent(ctx context.Context, sandbox string, pod *corev1.Pod, id string) {
	w.t.Helper()
	testenv.Eventually(w.t, waitFor, "the container started before net1 stopped by the agent", func(ctx context.Context) error {
		if st := w.containerState(ctx, id); st != runtimeapi.ContainerState_CONTAINER_EXITED {
			return fmt.Errorf("container %s is %s", id, st)
		}
		return nil
	})
	testenv.Eventually(w.t, waitFor, "the restarted container created", func(ctx context.Context) error {
		_, err := w.createContainerID(ctx, sandbox, pod, "app", 1)
		return err
	})
	if links := podLinks(w.t, handleAt(w.t, w.sandboxNetNS(pod))); links["net1"] == nil {
		w.t.Fatalf("pod links %v once the restarted container was created, want net1", keys(links))
	}
	ev := w.waitEvent(pod, v1alpha1.ReasonRestartedWithoutNetworks)
	if !strings.Contains(ev, `container "app"`) {
		w.t.Errorf("event %s says %q, want it to name the container", v1alpha1.ReasonRestartedWithoutNetworks, ev)
	}
}

// waitEvent waits for an Event of reason on pod and returns its note.
func (w *world) waitEvent(pod *corev1.Pod, reason string) string {
	w.t.Helper()
	var note string
	testenv.Eventually(w.t, waitFor, "event "+reason+" on "+pod.Name, func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := w.env.Client.List(ctx, &list, client.InNamespace(pod.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.UID == pod.UID && e.Reason == reason {
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("no %s event among %d", reason, len(list.Items))
	})
	return note
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
	tenant := w.ensureNamespace("tenant")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Not opted in: the agent refuses to attach its pods, so their net1
	// never exists while the test looks.
	later := w.uniqueName("later")
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: later}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: later, Name: v1alpha1.DefaultServiceAccount}},
	} {
		if err := w.env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	nriSocket := filepath.Join(filepath.Dir(w.cri.Socket), localcluster.NodeNRISocket)
	w.ensureNode()
	agent := w.startAgent("--nri-socket", nriSocket)
	waitNRIConnected(t, agent)
	// The agent's probe finds the validator on, and reports it.
	waitMetric(t, agent.metrics, `podnet_agent_nri_validator{result="enforced"} 1`)
	w.waitNodeHoldLabel(v1alpha1.NodeHoldNRIEnforced)

	t.Run("the plugin refuses a pod not attached", func(t *testing.T) {
		pod := w.createPod(later, "val-refused", heldByNRI(w.approvedAnnotations(later, data)))
		err := w.createContainer(ctx, w.runSandboxOf(ctx, pod), pod)
		if err == nil || !strings.Contains(err.Error(), "net1 missing") {
			t.Fatalf("create container: err = %v, want the plugin's refusal naming net1", err)
		}
	})

	t.Run("a hang after RunPodSandbox lets that one container through; the agent stops it once attached", func(t *testing.T) {
		pod := w.createPod(later, "val-hung", heldByNRI(w.approvedAnnotations(later, data)))
		sb := w.runSandboxOf(ctx, pod)
		// The agent judged the pod (not granted yet) before it hangs.
		w.waitCondition(later, "val-hung", corev1.ConditionFalse, v1alpha1.ReasonGrantRevoked, waitFor)
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
		id, err := w.createContainerID(ctx, sb, pod, "app", 0)
		if err != nil {
			t.Fatalf("create container while the agent hangs: %v; NRI no longer counts a dropped plugin as having processed the call: the validator covers hangs now", err)
		}
		w.startContainer(ctx, id)
		if links := podLinks(t, handleAt(t, w.sandboxNetNS(pod))); links["net1"] != nil {
			t.Fatal("net1 exists in a pod the agent refused")
		}
		// Dropped, the plugin is missing from every later call: refused.
		err = w.createContainerNamed(ctx, sb, pod, "app2")
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
		again := w.createPod(tenant, "val-resumed", heldByNRI(w.approvedAnnotations(tenant, data)))
		sbAgain := w.runSandboxOf(ctx, again)
		testenv.Eventually(t, waitFor, "a required pod's container created once the agent resumed", func(ctx context.Context) error {
			return w.createContainer(ctx, sbAgain, again)
		})
		// The grant comes: the agent attaches val-hung and stops the
		// container that started without net1; the kubelet's restart
		// finds net1.
		if st := w.containerState(ctx, id); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Fatalf("the container that slipped through is %s before the attach, want running", st)
		}
		w.optIn(ctx, later)
		w.waitCondition(later, "val-hung", corev1.ConditionTrue, v1alpha1.ReasonAttached, waitFor)
		w.waitStoppedByTheAgent(ctx, sb, pod, id)
		waitMetric(t, agent.metrics, "podnet_agent_containers_restarted_total 1")
	})

	t.Run("a killed agent's required pods are refused until it is back", func(t *testing.T) {
		agent.Stop(t, syscall.SIGKILL, 10*time.Second)
		pod := w.createPod(tenant, "val-killed", heldByNRI(w.approvedAnnotations(tenant, data)))
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

// ensureNode creates the agent's Node, on which it reports its NRI probe.
func (w *world) ensureNode() {
	w.t.Helper()
	err := w.env.Client.Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.node}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		w.t.Fatal(err)
	}
}

// waitNodeHoldLabel waits for the agent to label its Node with its NRI
// probe's answer.
func (w *world) waitNodeHoldLabel(want string) {
	w.t.Helper()
	testenv.Eventually(w.t, waitFor, v1alpha1.NodeHoldNRILabel+"="+want, func(ctx context.Context) error {
		var n corev1.Node
		if err := w.env.Client.Get(ctx, client.ObjectKey{Name: w.node}, &n); err != nil {
			return err
		}
		if got := n.Labels[v1alpha1.NodeHoldNRILabel]; got != want {
			return fmt.Errorf("node %s: %s=%q", w.node, v1alpha1.NodeHoldNRILabel, got)
		}
		return nil
	})
}

// heldByNRI marks a pod's annotations as the webhook does when it holds the
// pod with NRI (--hold-pods=nri, or auto choosing nri).
func heldByNRI(ann map[string]string) map[string]string {
	ann[v1alpha1.NRIRequiredPluginsAnnotation] = v1alpha1.NRIRequiredPluginsValue
	return ann
}
