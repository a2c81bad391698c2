package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// unheldProfile grants tenant-a a network of one address of its own, so
// that a pod's attach fails while another pod holds it.
var unheldProfile = oneAddressProfileOf("e2e-unheld", "onemore", "192.168.61.8/32")

// testUnheldAppRestarted makes NRI's gap happen for real: a pod's attach
// fails (its network's one address taken), so the plugin refuses its app;
// then the agent hangs (SIGSTOP), and the kubelet's next CreateContainer
// reaches the hung plugin, which NRI drops after its 2 s timeout while
// counting the call as processed, so even the validator lets that one
// app run, without net1. Once the agent runs again and the address is
// free, the agent attaches net1 and stops that app; the kubelet starts it
// again (restartCount 1), and its new first command sees net1.
func (s *suite) testUnheldAppRestarted(t *testing.T, node string) {
	// The kubelet's next CreateContainer, not the liveness probe (three
	// missed checks, 30 s), must find the stopped agent: the probe would
	// restart it, and the new agent would refuse the app as it should.
	s.kubectl(t, "", "-n", "podnet-system", "patch", "daemonset", "podnet-agent", "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/livenessProbe/failureThreshold","value":60}]`)
	s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "daemonset/podnet-agent", "--timeout=180s")
	eventually(t, time.Minute, "every agent registered over NRI", func(context.Context) error {
		return s.nriConnected()
	})
	s.apply(t, unheldProfile)
	s.apply(t, firstCommandDeployment(t, "nri-unheld-filler", node, "onemore"))
	s.waitPodsWith(t, "nri-unheld-filler", 1, "net1")
	s.apply(t, firstCommandDeployment(t, "nri-unheld", node, "onemore"))
	name := s.waitRefused(t, "nri-unheld", "podnet networks not ready: interface(s) net1 missing")
	eventually(t, time.Minute, "the agent's condition on "+name, func(ctx context.Context) error {
		p, err := s.onePod(ctx, "nri-unheld")
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == podnetv1.NetworksReadyCondition && c.Status == corev1.ConditionFalse {
				return nil
			}
		}
		return fmt.Errorf("pod %s: no False %s condition yet", p.Name, podnetv1.NetworksReadyCondition)
	})

	pid := s.agentPID(t, node)
	s.signal(t, pid, syscall.SIGSTOP)
	stopped := true
	resume := func() {
		// ESRCH: the liveness probe had the stopped agent restarted.
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			t.Errorf("SIGCONT to agent pid %d: %v", pid, err)
		}
		stopped = false
	}
	t.Cleanup(func() {
		if stopped {
			resume()
		}
	})
	eventually(t, 4*time.Minute, "the app of "+name+" run past the hung plugin", func(ctx context.Context) error {
		c, err := s.appStatus(ctx, "nri-unheld")
		if err != nil {
			return err
		}
		if c.State.Running == nil {
			return fmt.Errorf("app not running: %+v", c.State)
		}
		return nil
	})
	resume()
	s.checkFirstCommand(t, name, "FIRST-NET1-MISSING")

	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "nri-unheld-filler", "--wait=false")
	p := s.waitPodsWith(t, "nri-unheld", 1, "net1")[0]
	if p.Name != name {
		t.Fatalf("pod %s Ready, want %s", p.Name, name)
	}
	eventually(t, 2*time.Minute, "the app of "+name+" started again", func(ctx context.Context) error {
		c, err := s.appStatus(ctx, "nri-unheld")
		if err != nil {
			return err
		}
		if c.RestartCount == 0 || c.State.Running == nil {
			return fmt.Errorf("app restarted %d times, state %+v", c.RestartCount, c.State)
		}
		return nil
	})
	s.waitReady(t, "nri-unheld")
	c, err := s.appStatus(context.Background(), "nri-unheld")
	if err != nil {
		t.Fatal(err)
	}
	if c.RestartCount != 1 {
		t.Errorf("pod %s: app restarted %d times, want once", name, c.RestartCount)
	}
	s.checkFirstCommand(t, name, "FIRST-NET1-PRESENT")
	if prev := s.kubectl(t, "", "-n", tenantNS, "logs", name, "-c", "app", "--previous"); !strings.Contains(prev, "FIRST-NET1-MISSING") {
		t.Errorf("pod %s: the stopped app printed %q, want FIRST-NET1-MISSING", name, prev)
	}
	ev := s.kubectl(t, "", "-n", tenantNS, "get", "events", "--field-selector", "involvedObject.name="+name+",reason="+podnetv1.ReasonRestartedWithoutNetworks, "-o", "jsonpath={.items[*].message}")
	if !strings.Contains(ev, `container "app"`) {
		t.Errorf("pod %s: %s events say %q, want them to name the app", name, podnetv1.ReasonRestartedWithoutNetworks, ev)
	}
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "nri-unheld", "--wait=false")
}

// appStatus is the status of the app container of app's one pod.
func (s *suite) appStatus(ctx context.Context, app string) (corev1.ContainerStatus, error) {
	p, err := s.onePod(ctx, app)
	if err != nil {
		return corev1.ContainerStatus{}, err
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == "app" {
			return c, nil
		}
	}
	return corev1.ContainerStatus{}, fmt.Errorf("pod %s: no app status yet", p.Name)
}
