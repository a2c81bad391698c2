package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cniplugin"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/testenv"
)

// cniWorld is a world whose containerd (runtime: see critest.Options)
// runs podnet's chained plugin, from a CNI bin folder of its own, after
// the sandboxes' bridge, pointed at the agent's socket.
func cniWorld(t *testing.T, runtime string) (*world, string) {
	t.Helper()
	bin := t.TempDir()
	if err := localcluster.LinkCNIPlugins(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(binary(t, image.CNICommand), filepath.Join(bin, cniplugin.Type)); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(t.TempDir(), "podnet", "cni.sock")
	w := newWorldWith(t, critest.Options{Runtime: runtime, CNIBinDir: bin, Chained: []map[string]any{{
		"type": cniplugin.Type, "socket": socket, "timeout": "30s",
		"capabilities": map[string]bool{cniplugin.PodAnnotationsCapability: true},
	}}})
	return w, socket
}

// TestRootAgentAttachAtSandboxSetup runs the real podnet-cni plugin inside
// a real containerd's RunPodSandbox (1.6 and 2: critest.Runtimes; the
// agent checks the sandbox with the runtime while the runtime is still
// setting it up, where the two answer differently; CRI-O reports nothing
// then, testCNIRefusedOnCRIO), chained after the bridge, with the
// real agent binary serving its socket: containerd passes the pod's
// annotations (only the approved pod asks the agent), the pod's interfaces
// exist when RunPodSandbox returns, a forged approval fails the sandbox
// with the reason, the agent refuses requests for pods it must not attach,
// and a plain pod's sandbox never depends on the agent.
func TestRootAgentAttachAtSandboxSetup(t *testing.T) {
	for _, rt := range critest.Runtimes {
		t.Run(rt, func(t *testing.T) { testAgentAttachAtSandboxSetup(t, rt) })
	}
}

func testAgentAttachAtSandboxSetup(t *testing.T, runtime string) {
	w, socket := cniWorld(t, runtime)
	tenant := w.ensureNamespace("tenant")
	agent := w.startAgent("--cni-socket", socket)
	if runtime == localcluster.RuntimeCRIO {
		testCNIRefusedOnCRIO(t, w, agent, tenant)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Until the agent listens, a sandbox fails and the kubelet retries it;
	// here the test waits instead.
	testenv.Eventually(t, waitFor, "the agent's cni socket", func(context.Context) error {
		st, err := os.Stat(socket)
		if err == nil && st.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("%s is not a socket", socket)
		}
		if err == nil && st.Mode().Perm() != 0o600 {
			return fmt.Errorf("%s has mode %v, want 0600", socket, st.Mode().Perm())
		}
		return err
	})

	t.Run("interfaces exist when the sandbox is READY", func(t *testing.T) {
		pod := w.createPod(tenant, "cni-one", w.approvedAnnotations(tenant, data))
		if _, err := w.cri.RunSandboxAnnotated(ctx, pod.Namespace, pod.Name, string(pod.UID), pod.Annotations); err != nil {
			t.Fatalf("run sandbox: %v", err)
		}
		// No wait: RunPodSandbox returned, so the sandbox is READY now.
		links := podLinks(t, handleAt(t, w.sandboxNetNS(pod)))
		if links["net1"] == nil {
			t.Fatalf("pod links %v right after RunPodSandbox, want net1", keys(links))
		}
		ready := w.waitCondition(tenant, "cni-one", corev1.ConditionTrue, "NetworksAttached", waitFor)
		// The runtime records the pod's IPs only once the sandbox is set
		// up; the plugin passed them on, so the first status has them.
		sb, err := cri.Resolver{Runtime: w.cri.Runtime}.Sandbox(ctx, string(pod.UID))
		if err != nil || len(sb.IPs) == 0 {
			t.Fatalf("sandbox of cni-one: %+v, %v", sb, err)
		}
		st := ready.Annotations[v1alpha1.NetworkStatusAnnotation]
		if want := fmt.Sprintf(`"interface":"eth0","ips":[%q]`, sb.IPs[0]); !strings.Contains(st, want) {
			t.Errorf("network-status %s lacks %s, the sandbox's address", st, want)
		}
		body := scrape(t, agent.metrics)
		for _, step := range []string{"wait", "addresses", "interfaces", "total"} {
			if want := fmt.Sprintf(`podnet_agent_sandbox_setup_seconds_count{step=%q} 1`, step); !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("a forged approval fails the sandbox with the reason", func(t *testing.T) {
		ann := w.approvedAnnotations(tenant, data)
		ann[v1alpha1.ApprovedSignatureAnnotation] = strings.Repeat("A", len(ann[v1alpha1.ApprovedSignatureAnnotation]))
		pod := w.createPod(tenant, "cni-forged", ann)
		_, err := w.cri.RunSandboxAnnotated(ctx, pod.Namespace, pod.Name, string(pod.UID), pod.Annotations)
		if err == nil || !strings.Contains(err.Error(), tenant+"/cni-forged") || !strings.Contains(err.Error(), "approval refused") {
			t.Fatalf("run sandbox of a forged approval: err = %v, want a failure naming the pod and the refusal", err)
		}
	})

	t.Run("the agent refuses pods it must not attach", func(t *testing.T) {
		plain := w.createPod(tenant, "cni-plain", nil)
		other := w.createPod(tenant, "cni-other", w.approvedAnnotations(tenant, data))
		elsewhere := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tenant, Name: "cni-elsewhere", Annotations: w.approvedAnnotations(tenant, data)},
			Spec: corev1.PodSpec{NodeName: "another-node", Containers: []corev1.Container{{Name: "app", Image: image.BusyboxImage}}}}
		if err := w.env.Client.Create(ctx, elsewhere); err != nil {
			t.Fatal(err)
		}
		// cni-one's sandbox is READY: a real sandbox of another pod.
		var one corev1.Pod
		if err := w.env.Client.Get(ctx, client.ObjectKey{Namespace: tenant, Name: "cni-one"}, &one); err != nil {
			t.Fatal(err)
		}
		oneSB, err := cri.Resolver{Runtime: w.cri.Runtime}.Sandbox(ctx, string(one.UID))
		if err != nil {
			t.Fatal(err)
		}
		asOther := func(sandbox, netns string) cnisocket.Request {
			return cnisocket.Request{Namespace: tenant, Name: "cni-other", UID: string(other.UID), SandboxID: sandbox, NetNS: netns}
		}
		cases := []struct {
			name string
			req  cnisocket.Request
			want string
		}{
			{"unknown pod", cnisocket.Request{Namespace: tenant, Name: "ghost", UID: "ghost-uid"}, "not a pod of node"},
			{"no uid", cnisocket.Request{Namespace: tenant, Name: "cni-other"}, "uid: must not be empty"},
			{"wrong uid", cnisocket.Request{Namespace: tenant, Name: "cni-other", UID: "not-" + string(other.UID)}, "is not the pod's"},
			{"pod of another node", cnisocket.Request{Namespace: tenant, Name: "cni-elsewhere", UID: string(elsewhere.UID)}, "not a pod of node"},
			{"unapproved pod", cnisocket.Request{Namespace: tenant, Name: "cni-plain", UID: string(plain.UID)}, "has no " + v1alpha1.ApprovedAnnotation},
			{"the node's netns", asOther(oneSB.ID, w.hostNS), "is the node's (--host-netns) network namespace, never a pod's"},
			{"the agent's own netns", asOther(oneSB.ID, fmt.Sprintf("/proc/%d/ns/net", agent.Cmd.Process.Pid)), "network namespace, never a pod's"},
			{"not a netns", asOther(oneSB.ID, "/etc/hostname"), `netns "/etc/hostname": not a namespace file`},
			{"another pod's sandbox and netns", asOther(oneSB.ID, oneSB.NetNS), fmt.Sprintf("the runtime made it for pod uid %q", one.UID)},
			{"a sandbox the runtime does not know", asOther("sb-unknown", oneSB.NetNS), `sandbox "sb-unknown"`},
		}
		var wg sync.WaitGroup
		for _, c := range cases {
			wg.Go(func() {
				if c.req.SandboxID == "" {
					c.req.SandboxID, c.req.NetNS = "sb-test", "/var/run/netns/none"
				}
				err := cnisocket.Call(ctx, socket, c.req)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
				}
			})
		}
		wg.Wait()
	})

	t.Run("a plain pod never depends on the agent", func(t *testing.T) {
		agent.Stop(t, syscall.SIGTERM, 20*time.Second)
		plain := w.createPod(tenant, "cni-plain-2", nil)
		if _, err := w.cri.RunSandboxAnnotated(ctx, plain.Namespace, plain.Name, string(plain.UID), map[string]string{"app": "x"}); err != nil {
			t.Fatalf("plain pod's sandbox with the agent down: %v", err)
		}
		pod := w.createPod(tenant, "cni-two", w.approvedAnnotations(tenant, data))
		_, err := w.cri.RunSandboxAnnotated(ctx, pod.Namespace, pod.Name, string(pod.UID), pod.Annotations)
		if err == nil || !strings.Contains(err.Error(), tenant+"/cni-two") {
			t.Fatalf("approved pod's sandbox with the agent down: err = %v, want a failure naming the pod", err)
		}
	})
}

// testCNIRefusedOnCRIO: CRI-O reports a sandbox only once its CNI plugins
// have run, so the agent could check no request of the chained plugin
// against the runtime's record. It refuses to serve it at all, saying why
// and what to use instead, and a podnet pod's sandbox then fails (the
// plugin finds no agent): closed, never attached unchecked.
func testCNIRefusedOnCRIO(t *testing.T, w *world, agent *agentProc, tenant string) {
	select {
	case <-agent.Done():
	case <-time.After(time.Minute):
		t.Fatalf("the agent with --cni-socket still runs on CRI-O after a minute; log:\n%s", testenv.Tail(agent.log.String(), 3000))
	}
	for _, want := range []string{"--cni-socket: attach at sandbox setup needs a runtime that records a sandbox before its CNI plugins run", "cri-o", "--hold-pods=nri"} {
		if !strings.Contains(agent.log.String(), want) {
			t.Errorf("the agent's log lacks %q:\n%s", want, testenv.Tail(agent.log.String(), 3000))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod := w.createPod(tenant, "cni-crio", w.approvedAnnotations(tenant, data))
	if id, err := w.cri.RunSandboxAnnotated(ctx, pod.Namespace, pod.Name, string(pod.UID), pod.Annotations); err == nil {
		t.Fatalf("sandbox %s of a podnet pod ran with no agent to attach it", id)
	}
}
