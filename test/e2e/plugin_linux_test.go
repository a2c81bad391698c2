package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
)

const pluginNS = "plugin-e2e"

// pluginProfile offers "tiny", a bridge network whose one pool (a /30)
// holds two addresses, to the plugin test's namespace only (named, so
// the pool is not shared and has no default quota per namespace).
const pluginProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: plugin-e2e}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: plugin-e2e}}
  networks:
  - name: tiny
    bridge: {name: pnbr-e2t}
    ipam: {pools: ["192.168.58.0/30"]}
`

// testKubectlPodnet installs kubectl-podnet the way a user does (the
// binary on PATH, found by kubectl) and checks that `kubectl podnet
// explain` names the reason of two stuck pods: one pinned to a node where
// no agent runs, one left without an address by an exhausted pool.
func (s *suite) testKubectlPodnet(t *testing.T) {
	bin := t.TempDir()
	if err := image.BuildGoBinary(context.Background(), s.in.Root, "./cmd/kubectl-podnet", filepath.Join(bin, "kubectl-podnet")); err != nil {
		t.Fatal(err)
	}
	s.apply(t, pluginProfile)
	s.kubectl(t, "", "create", "namespace", pluginNS)
	s.kubectl(t, "", "label", "namespace", pluginNS, podnetv1.EnabledLabel+"=true", "tenant=plugin")
	t.Cleanup(func() { s.cleanUpPluginTest(t) })

	// Bound to a node that has no kubelet and so no agent.
	s.apply(t, tinyPod("pinned", "nodeName: "+clusterName+"-n9"))
	out, code := s.podnet(t, bin, "explain", "-n", pluginNS, "pinned")
	if code != 0 || !strings.Contains(out, `Reason:     no podnet-agent is ready on node "`+clusterName+`-n9"`) {
		t.Fatalf("explain of a pod on a node without agent: exit %d\n%s", code, out)
	}
	// No kubelet will ever confirm its deletion.
	s.kubectl(t, "", "-n", pluginNS, "delete", "pod", "pinned", "--grace-period=0", "--force")

	// Three pods on node 1 for two addresses: one of them is stuck.
	for _, name := range []string{"tiny-1", "tiny-2", "tiny-3"} {
		s.apply(t, tinyPod(name, "nodeName: "+node1))
	}
	stuck := s.waitIPAMFailed(t)
	out, code = s.podnet(t, bin, "explain", "-n", pluginNS, stuck)
	if code != 0 || !strings.Contains(out, "Reason:     no address could be reserved") || !strings.Contains(out, "Warning  IPAMFailed") {
		t.Fatalf("explain of a pod left without an address: exit %d\n%s", code, out)
	}
	out, code = s.podnet(t, bin, "pools")
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "plugin-e2e tiny 192.168.58.0/30 2 2 0 100.0%") {
		t.Fatalf("pools: exit %d\n%s", code, out)
	}
	out, code = s.podnet(t, bin, "networks", "-n", pluginNS)
	if code != 0 || !strings.Contains(out, "tiny") {
		t.Fatalf("networks: exit %d\n%s", code, out)
	}
	out, code = s.podnet(t, bin, "can-i", "-n", pluginNS, "tiny@net3")
	if code != 0 || !strings.Contains(out, "net3") {
		t.Fatalf("can-i: exit %d\n%s", code, out)
	}
	out, code = s.podnet(t, bin, "can-i", "-n", pluginNS, "data")
	if code != 1 || !strings.Contains(out, `no profile offers network "data"`) {
		t.Fatalf("can-i of a network the namespace may not use: exit %d\n%s", code, out)
	}
}

// tinyPod asks for "tiny" and is placed by spec (no scheduler involved).
func tinyPod(name, placement string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  annotations: {%s: tiny}
spec:
  %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: ["sleep", "86400"]
`, name, pluginNS, podnetv1.NetworksAnnotation, placement)
}

// podnet runs `kubectl podnet args…` with kubectl-podnet on PATH and
// returns stdout and stderr together and the exit code.
func (s *suite) podnet(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(s.in.Kubectl(), append([]string{"podnet"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig, "PATH="+bin+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl podnet %s: %v", strings.Join(args, " "), err)
	}
	t.Logf("kubectl podnet %s (exit %d)\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), out)
	return string(out), cmd.ProcessState.ExitCode()
}

// waitIPAMFailed waits until two tiny pods are Ready and the third carries
// the agent's IPAMFailed condition, and returns the third's name.
func (s *suite) waitIPAMFailed(t *testing.T) string {
	t.Helper()
	var stuck string
	eventually(t, 3*time.Minute, "two tiny pods Ready, one IPAMFailed", func(ctx context.Context) error {
		var list corev1.PodList
		if err := s.client.List(ctx, &list, client.InNamespace(pluginNS)); err != nil {
			return err
		}
		readyPods, failed := 0, []string{}
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				switch {
				case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
					readyPods++
				case c.Type == podnetv1.NetworksReadyCondition && c.Status == corev1.ConditionFalse && c.Reason == "IPAMFailed":
					failed = append(failed, p.Name)
				}
			}
		}
		if readyPods != 2 || len(failed) != 1 {
			return fmt.Errorf("%d Ready, IPAMFailed: %v", readyPods, failed)
		}
		stuck = failed[0]
		return nil
	})
	return stuck
}

// cleanUpPluginTest removes the test's namespace and profile and waits
// until the agents have released the addresses, so later steps start clean.
func (s *suite) cleanUpPluginTest(t *testing.T) {
	s.kubectl(t, "", "delete", "namespace", pluginNS, "--wait=false")
	s.kubectl(t, "", "delete", "networkprofile", "plugin-e2e", "--ignore-not-found")
	eventually(t, 2*time.Minute, "plugin test pods and tiny IPClaims gone", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := s.client.List(ctx, &pods, client.InNamespace(pluginNS)); err != nil || len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left (%v)", len(pods.Items), err)
		}
		var claims podnetv1.IPClaimList
		if err := s.client.List(ctx, &claims, client.MatchingLabels{podnetv1.NetworkLabel: "tiny"}); err != nil || len(claims.Items) > 0 {
			return fmt.Errorf("%d tiny IPClaims left (%v)", len(claims.Items), err)
		}
		return nil
	})
}
