package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
)

// nriCluster is the one-node containerd 2 cluster whose agent serves the
// NRI plugin; its conflist does not chain podnet-cni.
var nriCluster = clusterName + "-nri"

// agentAbsentLabel is a node label no node has: a nodeSelector on it takes
// the agent off every node.
const agentAbsentLabel = "podnet-e2e/agent-absent"

// TestRootE2EAttachWithNRI: on containerd 2 with NRI's default validator,
// the agent registered as an NRI plugin (--nri-socket) and the webhook
// injecting no wait container, a pod with a network has no init container,
// its app's first command sees net1 and it becomes Ready with its
// address, while a pod without networks starts as usual. Then, with the
// agent gone from the node: NRI alone fails open (a podnet pod without
// the required-plugins annotation runs its app without net1), while a pod
// that requires the plugin never runs its app until the agent is back,
// then does so with net1.
func TestRootE2EAttachWithNRI(t *testing.T) {
	if nodeRuntime != localcluster.RuntimeContainerd2 {
		t.Skipf("NRI needs containerd 2: run with PODNET_E2E_RUNTIME=%s (got %q)", localcluster.RuntimeContainerd2, nodeRuntime)
	}
	s := setUpWith(t, localcluster.Options{Name: nriCluster, Nodes: 1, NRIDefaultValidator: true})
	node := nriCluster + "-n1"
	s.testAdmin(t)
	s.enableNRI(t)
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
	t.Run("AgentAbsent", func(t *testing.T) {
		s.agentAway(t)
		// NRI alone: no plugin connected, nothing holds the container.
		s.apply(t, firstCommandDeployment(t, "nri-open", node, "data"))
		// Required by the pod, the runtime's validator refuses the
		// container that podnet's plugin did not process.
		s.apply(t, requirePlugin(t, firstCommandDeployment(t, "nri-closed", node, "data")))
		eventually(t, 2*time.Minute, "nri-open's app running", func(ctx context.Context) error {
			return s.appRunning(ctx, "nri-open")
		})
		s.checkFirstCommand(t, s.onlyPod(t, "nri-open").Name, "FIRST-NET1-MISSING")
		held := s.waitRefused(t, "nri-closed", `required plugin "podnet" not present`)
		s.agentBack(t)
		p := s.waitPodsWith(t, "nri-closed", 1, "net1")[0]
		if p.Name != held {
			t.Errorf("pod %s Ready, want the held pod %s", p.Name, held)
		}
		s.checkFirstCommand(t, p.Name, "FIRST-NET1-PRESENT")
		// The pod that ran without its network gets it once the agent is
		// back, too late for its first command.
		s.waitPodsWith(t, "nri-open", 1, "net1")
	})
}

// enableNRI registers every agent as an NRI plugin on its node's socket
// (the local cluster's node folders are mounted at /run/podnet-nodes) and
// makes the webhook inject no wait container.
func (s *suite) enableNRI(t *testing.T) {
	t.Helper()
	s.kubectl(t, "", "-n", "podnet-system", "patch", "daemonset", "podnet-agent", "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--nri-socket=/run/podnet-nodes/$(NODE_NAME)/`+localcluster.NodeNRISocket+`"}]`)
	s.kubectl(t, "", "-n", "podnet-system", "patch", "deployment", "podnet-webhook", "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--attach-at-sandbox-setup"}]`)
	s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "daemonset/podnet-agent", "--timeout=180s")
	s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "deployment/podnet-webhook", "--timeout=180s")
	eventually(t, time.Minute, "every agent registered over NRI", func(ctx context.Context) error {
		for _, pod := range s.liveAgentPods(t) {
			m, err := s.kubectlErr("", "get", "--raw", "/api/v1/namespaces/podnet-system/pods/"+pod+":9480/proxy/metrics")
			if err != nil {
				return err
			}
			if !strings.Contains(m, "\npodnet_agent_nri_connected 1\n") {
				return fmt.Errorf("agent %s: podnet_agent_nri_connected is not 1", pod)
			}
		}
		return nil
	})
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

// requirePlugin adds NRI's required-plugins annotation naming podnet to a
// deployment() manifest.
func requirePlugin(t *testing.T, manifest string) string {
	t.Helper()
	const ann = "annotations: {"
	if !strings.Contains(manifest, ann) {
		t.Fatalf("deployment() no longer writes %q", ann)
	}
	return strings.Replace(manifest, ann, ann+podnetv1.NRIRequiredPluginsAnnotation+`: '["`+podnetv1.NRIPluginName+`"]', `, 1)
}

// onlyPod is app's one live pod.
func (s *suite) onlyPod(t *testing.T, app string) corev1.Pod {
	t.Helper()
	pods, err := s.pods(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Fatalf("%d %s pods, want 1", len(pods), app)
	}
	return pods[0]
}

// appRunning says whether app's one pod runs its app container.
func (s *suite) appRunning(ctx context.Context, app string) error {
	pods, err := s.pods(ctx, app)
	if err != nil {
		return err
	}
	if len(pods) != 1 {
		return fmt.Errorf("%d %s pods", len(pods), app)
	}
	for _, c := range pods[0].Status.ContainerStatuses {
		if c.Name == "app" && c.State.Running != nil {
			return nil
		}
	}
	return fmt.Errorf("pod %s: app not running: %+v", pods[0].Name, pods[0].Status.ContainerStatuses)
}

// waitRefused waits until the runtime refused app's container with a
// message containing why, checks that the app never ran, and returns the
// pod's name.
func (s *suite) waitRefused(t *testing.T, app, why string) string {
	t.Helper()
	var name string
	eventually(t, 2*time.Minute, app+"'s container refused: "+why, func(ctx context.Context) error {
		pods, err := s.pods(ctx, app)
		if err != nil {
			return err
		}
		if len(pods) != 1 {
			return fmt.Errorf("%d %s pods", len(pods), app)
		}
		for _, c := range pods[0].Status.ContainerStatuses {
			if c.Name != "app" {
				continue
			}
			if c.State.Running != nil || c.State.Terminated != nil || c.RestartCount != 0 {
				t.Fatalf("pod %s: the app ran without its networks: %+v", pods[0].Name, c)
			}
			if w := c.State.Waiting; w != nil && w.Reason == "CreateContainerError" && strings.Contains(w.Message, why) {
				name = pods[0].Name
				return nil
			}
		}
		return fmt.Errorf("pod %s: %+v", pods[0].Name, pods[0].Status.ContainerStatuses)
	})
	return name
}

// checkFirstCommand: the app's first command of pod printed want.
func (s *suite) checkFirstCommand(t *testing.T, pod, want string) {
	t.Helper()
	logs := s.kubectl(t, "", "-n", tenantNS, "logs", pod, "-c", "app")
	if !strings.Contains(logs, want) {
		t.Errorf("pod %s: the app's first command printed %q, want %s", pod, logs, want)
	}
}

// waitReady waits until app's one pod is Ready.
func (s *suite) waitReady(t *testing.T, app string) {
	t.Helper()
	eventually(t, 2*time.Minute, app+" Ready", func(ctx context.Context) error {
		pods, err := s.pods(ctx, app)
		if err != nil {
			return err
		}
		if len(pods) != 1 || !ready(pods[0]) {
			return fmt.Errorf("%d %s pods, not Ready", len(pods), app)
		}
		return nil
	})
}
