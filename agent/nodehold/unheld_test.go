package nodehold

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cristop"
)

var unheldT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// nriPod is a pod held by NRI with an app container, a sidecar and an
// init container, in the state opts give it.
func nriPod(opts ...func(*corev1.Pod)) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web", UID: "u1", Annotations: map[string]string{
			v1alpha1.ApprovedAnnotation:           "payload",
			v1alpha1.NRIRequiredPluginsAnnotation: v1alpha1.NRIRequiredPluginsValue,
		}},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app"}},
			InitContainers: []corev1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always}, {Name: v1alpha1.WaitContainerName}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withCondition(status corev1.ConditionStatus, reason string, at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: v1alpha1.NetworksReadyCondition, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at),
		})
	}
}

func withStatus(s string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[v1alpha1.NetworkStatusAnnotation] = s }
}

func started(name string, at time.Time) cristop.Container {
	return cristop.Container{ID: "id-" + name, Name: name, StartedAt: at}
}

// stopped lists the verdicts' containers as name:stop.
func stopped(vs []unheldVerdict) string {
	var out []string
	for _, v := range vs {
		s := "report"
		if v.Stop {
			s = "stop"
			if v.Grace == 0 {
				s = "kill"
			}
		}
		out = append(out, v.Container.Name+":"+s)
	}
	return strings.Join(out, ",")
}

func TestUnheldRestarts(t *testing.T) {
	links := unheldT0.Add(10 * time.Second)
	before, after := links.Add(-3*time.Second), links.Add(time.Millisecond)
	onlyEth0 := `[{"name":"cluster-network","interface":"eth0","default":true,"dns":{}}]`
	withNet1 := `[{"name":"cluster-network","interface":"eth0","default":true,"dns":{}},{"name":"tenant/data","interface":"net1","dns":{}}]`
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		containers []cristop.Container
		want       string
	}{
		{"first attach, app started before the links", nriPod(), []cristop.Container{started("app", before)}, "app:stop"},
		{"first attach, app started after the links were built", nriPod(), []cristop.Container{started("app", after), started("app", links)}, ""},
		{"the wait container waits for the links by design", nriPod(), []cristop.Container{started(v1alpha1.WaitContainerName, before)}, ""},
		{"a sidecar is stopped, an init container killed", nriPod(),
			[]cristop.Container{started("proxy", before), started("setup", before)}, "proxy:stop,setup:kill"},
		{"restartPolicy OnFailure: killed", nriPod(func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }),
			[]cristop.Container{started("app", before)}, "app:kill"},
		{"restartPolicy Never: only reported", nriPod(func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyNever }),
			[]cristop.Container{started("app", before), started("setup", before)}, "app:report,setup:report"},
		{"an ephemeral or unknown container: only reported", nriPod(), []cristop.Container{started("debugger", before)}, "debugger:report"},
		{"an attach failed before (condition False earlier): stopped", nriPod(withCondition(corev1.ConditionFalse, v1alpha1.ReasonIPAMFailed, unheldT0), withStatus(onlyEth0)),
			[]cristop.Container{started("app", before)}, "app:stop"},
		{"not held by NRI (no required-plugins annotation)", nriPod(func(p *corev1.Pod) { delete(p.Annotations, v1alpha1.NRIRequiredPluginsAnnotation) }),
			[]cristop.Container{started("app", before)}, ""},
		{"required-plugins names another plugin", nriPod(func(p *corev1.Pod) { p.Annotations[v1alpha1.NRIRequiredPluginsAnnotation] = `["other"]` }),
			[]cristop.Container{started("app", before)}, ""},
		{"agent restart over an attached pod", nriPod(withCondition(corev1.ConditionTrue, v1alpha1.ReasonAttached, unheldT0), withStatus(withNet1)),
			[]cristop.Container{started("app", before)}, ""},
		{"runtime change after the pod asked for nothing", nriPod(withCondition(corev1.ConditionTrue, v1alpha1.ReasonNoNetworks, unheldT0), withStatus("[]")),
			[]cristop.Container{started("app", before)}, ""},
		{"narrowed in place", nriPod(withCondition(corev1.ConditionTrue, v1alpha1.ReasonGrantNarrowed, unheldT0), withStatus(withNet1)),
			[]cristop.Container{started("app", before)}, ""},
		{"one of two interfaces revoked, granted back", nriPod(withCondition(corev1.ConditionFalse, v1alpha1.ReasonGrantRevoked, unheldT0), withStatus(withNet1)),
			[]cristop.Container{started("app", before)}, ""},
		{"every interface revoked after the app started, granted back", nriPod(withCondition(corev1.ConditionFalse, v1alpha1.ReasonGrantRevoked, before.Add(time.Second)), withStatus(onlyEth0)),
			[]cristop.Container{started("app", before)}, ""},
		{"refused from the start (not granted yet), app slipped through later", nriPod(withCondition(corev1.ConditionFalse, v1alpha1.ReasonGrantRevoked, unheldT0), withStatus(onlyEth0)),
			[]cristop.Container{started("app", before)}, "app:stop"},
	} {
		got := ""
		if since, ok := unheldCandidate(tc.pod); ok {
			got = stopped(unheldRestarts(unheldInput{pod: tc.pod, containers: tc.containers, attachedAt: links, since: since}))
		}
		if got != tc.want {
			t.Errorf("%s: verdicts %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestUnheldVerdictSaysWhy(t *testing.T) {
	links := unheldT0.Add(10 * time.Second)
	vs := unheldRestarts(unheldInput{pod: nriPod(), containers: []cristop.Container{started("app", unheldT0)}, attachedAt: links})
	if len(vs) != 1 {
		t.Fatalf("verdicts %+v, want one", vs)
	}
	for _, want := range []string{`container "app"`, "10s before", "NRI plugin", "starts it again"} {
		if !strings.Contains(vs[0].Why, want) {
			t.Errorf("why %q does not say %q", vs[0].Why, want)
		}
	}
}
