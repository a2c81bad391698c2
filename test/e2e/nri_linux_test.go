package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/install"
	"podnet.io/podnet/hack/localcluster"
)

// nriCluster is the one-node cluster, with NRI's default validator on,
// that TestRootE2EHoldAuto, TestRootE2EAttachWithNRI and
// TestRootE2ENRIFaults share, in that order; its conflist does not chain
// podnet-cni. Its runtime is PODNET_E2E_NRI_RUNTIME: containerd 2 by
// default, or CRI-O; never containerd 1.6, which has no NRI.
var (
	nriCluster = clusterName + "-nri"
	// nriShape has its own CNI bin folder so that make test can hand it
	// to the NRI burst's smoke (its Multus arms put Multus there).
	// Its validator names a tolerate annotation, as an admin may configure
	// it, and podnet is deployed knowing it (nriTolerate).
	nriShape = localcluster.Options{Name: nriCluster, Nodes: 1, Runtime: envOr("PODNET_E2E_NRI_RUNTIME", localcluster.RuntimeContainerd2),
		NRIDefaultValidator: true, NRITolerateAnnotation: nriTolerate, OwnCNIBinDir: true}
)

// nriTolerate is the annotation the NRI cluster's validator reads to let a
// pod's containers run without the plugins it requires
// (tolerate_missing_plugins_annotation); the webhook is deployed with
// --nri-tolerate-annotations for it (hack/deploy.sh NODE_NRI_TOLERATE).
const nriTolerate = "podnet-e2e.io/tolerate-missing-plugins"

// agentAbsentLabel is a node label no node has: a nodeSelector on it takes
// the agent off every node.
const agentAbsentLabel = "podnet-e2e/agent-absent"

// TestRootE2EAttachWithNRI: on containerd 2 with NRI's default validator
// and podnet deployed holding pods with NRI (deploy/components/hold-with-nri:
// the agent registered as an NRI plugin, the webhook with --hold-pods=nri),
// a pod with a network has no init container, its app's first command sees
// net1 and it becomes Ready with its address, while a pod without networks
// starts as usual. A pod whose attach fails (its network's one address
// taken) is refused by the plugin, naming the missing interface, until the
// attach succeeds. With the agent gone from the node, the runtime's
// validator refuses the containers of a podnet pod (the webhook named
// podnet's plugin in its required-plugins annotation) until the agent is
// back, and its app's first command sees net1; the same with the agent
// stopped (SIGSTOP). NRI alone, without the validator, fails open, and the
// one container a hung agent lets through is restarted once attached:
// TestRootAgentNRI and TestRootAgentNRIValidator show both, with the
// kubelet's calls made by the test, because on a cluster whether that
// container is the first call to reach the hung plugin depends on what
// else the node does in those two seconds.
func TestRootE2EAttachWithNRI(t *testing.T) {
	s := setUpHoldingWithNRI(t, middle)
	node := nriCluster + "-n1"
	s.testAdmin(t)
	t.Run("HeldUntilAttached", func(t *testing.T) {
		s.apply(t, firstCommandDeployment(t, "nri-attached", node, "data"))
		s.apply(t, firstCommandDeployment(t, "nri-plain", node, ""))
		p := s.waitPodsWith(t, "nri-attached", 1, "net1")[0]
		if len(p.Spec.InitContainers) != 0 {
			t.Errorf("pod %s has init containers %v, want none", p.Name, p.Spec.InitContainers)
		}
		s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
		s.waitReady(t, "nri-plain")
		if n := s.nriHookCalls(t, "CreateContainer"); n < 2 {
			t.Errorf("podnet_agent_nri_hook_seconds_count{hook=CreateContainer} = %d, want at least the two pods' containers", n)
		}
	})
	t.Run("TenantCannotWaiveTheValidator", func(t *testing.T) { s.testNRIWaiver(t, node, "nri-attached") })
	t.Run("HeldWhileAttachFails", func(t *testing.T) {
		// The network's one address is taken: the attach fails, and the
		// plugin refuses the container until it succeeds.
		s.apply(t, oneAddressProfile)
		s.apply(t, firstCommandDeployment(t, "nri-filler", node, "one"))
		s.waitPodsWith(t, "nri-filler", 1, "net1")
		s.apply(t, firstCommandDeployment(t, "nri-waiting", node, "one"))
		held := s.waitRefused(t, "nri-waiting", "podnet networks not ready: interface(s) net1 missing")
		s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "nri-filler", "--wait=false")
		p := s.waitPodsWith(t, "nri-waiting", 1, "net1")[0]
		if p.Name != held {
			t.Errorf("pod %s Ready, want the held pod %s", p.Name, held)
		}
		s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
	})
	t.Run("AgentAbsent", func(t *testing.T) {
		s.agentAway(t)
		// The webhook named podnet's plugin in the pod's required-plugins
		// annotation: the runtime's validator refuses the container that
		// the absent plugin did not process.
		s.apply(t, firstCommandDeployment(t, "nri-closed", node, "data"))
		held := s.waitRefused(t, "nri-closed", `required plugin "podnet" not present`)
		if got := s.onlyPod(t, "nri-closed").Annotations[podnetv1.NRIRequiredPluginsAnnotation]; got != podnetv1.NRIRequiredPluginsValue {
			t.Errorf("pod %s: %s = %q, want the webhook's %q", held, podnetv1.NRIRequiredPluginsAnnotation, got, podnetv1.NRIRequiredPluginsValue)
		}
		s.agentBack(t)
		p := s.waitPodsWith(t, "nri-closed", 1, "net1")[0]
		if p.Name != held {
			t.Errorf("pod %s Ready, want the held pod %s", p.Name, held)
		}
		s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
	})
	t.Run("AgentHung", func(t *testing.T) {
		// A stopped agent answers nothing: the runtime drops the plugin
		// after NRI's 2 s request timeout (at the sandbox's
		// RunPodSandbox), and the validator refuses the containers of a
		// pod that requires it.
		resume := s.stopAgent(t, node)
		s.apply(t, firstCommandDeployment(t, "nri-hung", node, "data"))
		held := s.waitRefused(t, "nri-hung", `required plugin "podnet" not present`)
		resume()
		// The agent reconnects by itself (or is restarted by its liveness
		// probe) and the held pod starts with its network.
		p := s.waitPodsWith(t, "nri-hung", 1, "net1")[0]
		if p.Name != held {
			t.Errorf("pod %s Ready, want the held pod %s", p.Name, held)
		}
		s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
		eventually(t, time.Minute, "the agent registered again over NRI", func(context.Context) error {
			return s.nriConnected()
		})
	})
}

// agentPID is the host PID of the agent's process on node, from the
// node's runtime: the pid in CRI's verbose container status, which
// containerd and CRI-O both give.
func (s *suite) agentPID(t *testing.T, node string) int {
	t.Helper()
	var pods corev1.PodList
	if err := s.client.List(context.Background(), &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-agent"}); err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, p := range pods.Items {
		for _, c := range p.Status.ContainerStatuses {
			if p.Spec.NodeName == node && p.DeletionTimestamp == nil && c.Name == "agent" && c.State.Running != nil {
				// containerd://<id> or cri-o://<id>
				_, id, _ = strings.Cut(c.ContainerID, "://")
			}
		}
	}
	if id == "" {
		t.Fatalf("no running agent container on %s", node)
	}
	var sock string
	for _, n := range s.cluster.Nodes {
		if n.Name == node {
			sock = n.CRISocket
		}
	}
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := runtimeapi.NewRuntimeServiceClient(conn).ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("status of the agent container %s on %s: %v", id, node, err)
	}
	var info struct{ Pid int }
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &info); err != nil || info.Pid <= 1 {
		t.Fatalf("agent container %s on %s: pid %d in its verbose status (%v): %.300s", id, node, info.Pid, err, st.GetInfo()["info"])
	}
	return info.Pid
}

// signal sends sig to the agent's process the test found.
func (s *suite) signal(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("signal %v to agent pid %d: %v", sig, pid, err)
	}
}

// stopAgent SIGSTOPs the agent's process on node and returns the function
// that lets it go on (SIGCONT), which also runs at the test's end if the
// test did not call it.
func (s *suite) stopAgent(t *testing.T, node string) (resume func()) {
	t.Helper()
	pid := s.agentPID(t, node)
	s.signal(t, pid, syscall.SIGSTOP)
	var once sync.Once
	resume = func() {
		once.Do(func() {
			// ESRCH: the liveness probe had the stopped agent restarted.
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Errorf("SIGCONT to agent pid %d: %v", pid, err)
			}
		})
	}
	t.Cleanup(resume)
	return resume
}

// nriConnected says whether every agent reports podnet_agent_nri_connected 1.
func (s *suite) nriConnected() error {
	var pods corev1.PodList
	if err := s.client.List(context.Background(), &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-agent"}); err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("no agent pod")
	}
	for _, p := range pods.Items {
		m, err := s.kubectlErr("", "get", "--raw", "/api/v1/namespaces/podnet-system/pods/"+p.Name+":9480/proxy/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(m, "\npodnet_agent_nri_connected 1\n") {
			return fmt.Errorf("agent %s: podnet_agent_nri_connected is not 1", p.Name)
		}
	}
	return nil
}

// oneAddressProfile grants tenant-a a network of one address.
var oneAddressProfile = oneAddressProfileOf("e2e-one", "one", "192.168.61.7/32")

// oneAddressProfileOf is the profile name granting tenant-a the network
// (on the bridge pnbr-<network>) whose one address is pool.
func oneAddressProfileOf(name, network, pool string) string {
	return fmt.Sprintf(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata:
  name: %s
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: %s
    bridge: {name: pnbr-%s}
    allowRawSockets: true   # busybox keeps NET_RAW, as in the e2e profile
    ipam:
      pools: [%q]
`, name, network, network, pool)
}

// setUpHoldingWithNRI takes the NRI cluster at place p of its chain and
// deploys podnet as make deploy does with deploy/components/hold-with-nri:
// the webhook with --hold-pods=nri (hack/deploy.sh NODE_HOLD=nri), each
// agent registered on its node's NRI socket (NODE_NRI_SOCKET); it returns
// once every agent is registered.
func setUpHoldingWithNRI(t *testing.T, p place) *suite {
	start := time.Now()
	s := setUpAt(t, nriShape, p, func(in *install.Installer) {
		in.DeployEnv = append(in.DeployEnv, "NODE_HOLD="+string(podnetv1.HoldNRI), "NODE_NRI_SOCKET="+localcluster.NodeNRISocket, "NODE_NRI_TOLERATE="+nriTolerate)
	})
	t.Logf("cluster up and podnet installed holding pods with NRI in %s", time.Since(start).Round(time.Second))
	eventually(t, time.Minute, "every agent registered over NRI", func(context.Context) error {
		return s.nriConnected()
	})
	return s
}

// liveAgentPods are the names of the agent pods not being deleted (Ready or
// not).
func (s *suite) liveAgentPods(t *testing.T) []string {
	t.Helper()
	var pods corev1.PodList
	if err := s.client.List(context.Background(), &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-agent"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// nriHookCalls sums podnet_agent_nri_hook_seconds_count of hook over the
// agents.
func (s *suite) nriHookCalls(t *testing.T, hook string) int {
	t.Helper()
	re := regexp.MustCompile(`(?m)^podnet_agent_nri_hook_seconds_count\{hook="` + hook + `"\} (\d+)$`)
	n := 0
	for _, pod := range s.liveAgentPods(t) {
		m := s.kubectl(t, "", "get", "--raw", "/api/v1/namespaces/podnet-system/pods/"+pod+":9480/proxy/metrics")
		if got := re.FindStringSubmatch(m); got != nil {
			v, _ := strconv.Atoi(got[1])
			n += v
		}
	}
	return n
}

// agentAway takes the agent off every node and waits until its pods are
// gone, and its NRI connection with them.
func (s *suite) agentAway(t *testing.T) {
	t.Helper()
	s.kubectl(t, "", "-n", "podnet-system", "patch", "daemonset", "podnet-agent", "-p",
		`{"spec":{"template":{"spec":{"nodeSelector":{"`+agentAbsentLabel+`":"true"}}}}}`)
	eventually(t, 2*time.Minute, "no agent pod left", func(context.Context) error {
		if pods := s.liveAgentPods(t); len(pods) != 0 {
			return fmt.Errorf("agent pods %v", pods)
		}
		return nil
	})
}

// agentBack puts the agent on its nodes again.
func (s *suite) agentBack(t *testing.T) {
	t.Helper()
	s.kubectl(t, "", "-n", "podnet-system", "patch", "daemonset", "podnet-agent", "-p",
		`{"spec":{"template":{"spec":{"nodeSelector":{"`+agentAbsentLabel+`":null}}}}}`)
	s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "daemonset/podnet-agent", "--timeout=180s")
}

// onePod is app's one live pod.
func (s *suite) onePod(ctx context.Context, app string) (corev1.Pod, error) {
	pods, err := s.pods(ctx, app)
	if err != nil {
		return corev1.Pod{}, err
	}
	if len(pods) != 1 {
		return corev1.Pod{}, fmt.Errorf("%d %s pods, want 1", len(pods), app)
	}
	return pods[0], nil
}

// onlyPod is onePod, failing the test when there is not exactly one.
func (s *suite) onlyPod(t *testing.T, app string) corev1.Pod {
	t.Helper()
	p, err := s.onePod(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// appRunning says whether app's one pod runs its app container.
func (s *suite) appRunning(ctx context.Context, app string) error {
	p, err := s.onePod(ctx, app)
	if err != nil {
		return err
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "app" && c.State.Running != nil {
			return nil
		}
	}
	return fmt.Errorf("pod %s: app not running: %+v", p.Name, p.Status.ContainerStatuses)
}

// waitRefused waits until the runtime refused app's container with a
// message containing why, checks that the app never ran, and returns the
// pod's name.
func (s *suite) waitRefused(t *testing.T, app, why string) string {
	t.Helper()
	var name string
	eventually(t, 2*time.Minute, app+"'s container refused: "+why, func(ctx context.Context) error {
		p, err := s.onePod(ctx, app)
		if err != nil {
			return err
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name != "app" {
				continue
			}
			if c.State.Running != nil || c.State.Terminated != nil || c.RestartCount != 0 {
				t.Fatalf("pod %s: the app ran without its networks: %+v", p.Name, c)
			}
			if w := c.State.Waiting; w != nil && w.Reason == "CreateContainerError" && strings.Contains(w.Message, why) {
				name = p.Name
				return nil
			}
		}
		return fmt.Errorf("pod %s: %+v", p.Name, p.Status.ContainerStatuses)
	})
	return name
}

// checkFirstCommand: the app's first command of pod printed want, in the
// app's first run: a container that ran first without its networks, failed
// and was restarted would show only the later run's logs, so the app must
// never have restarted.
func (s *suite) checkFirstCommand(t *testing.T, pod, want string) {
	t.Helper()
	p := s.getPod(t, tenantNS, pod)
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "app" && c.RestartCount != 0 {
			t.Errorf("pod %s: the app restarted %d times, so its logs are not its first run's: %+v", pod, c.RestartCount, c.LastTerminationState)
		}
	}
	logs := s.kubectl(t, "", "-n", tenantNS, "logs", pod, "-c", "app")
	if !strings.Contains(logs, want) {
		t.Errorf("pod %s: the app's first command printed %q, want %s", pod, logs, want)
	}
}

// waitReady waits until app's one pod is Ready.
func (s *suite) waitReady(t *testing.T, app string) {
	t.Helper()
	eventually(t, 2*time.Minute, app+" Ready", func(ctx context.Context) error {
		p, err := s.onePod(ctx, app)
		if err != nil {
			return err
		}
		if !ready(p) {
			return fmt.Errorf("pod %s not Ready", p.Name)
		}
		return nil
	})
}
