package hold

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func TestEnforceable(t *testing.T) {
	for _, c := range []struct {
		mode  v1alpha1.HoldMode
		node  Node
		ok    bool
		lacks string
	}{
		{v1alpha1.HoldWaitInitContainer, Node{}, true, ""},
		{v1alpha1.HoldAttachAtSandboxSetup, Node{ChainedCNI: true}, true, ""},
		{v1alpha1.HoldAttachAtSandboxSetup, Node{NRI: true}, false, "chained CNI plugin"},
		{v1alpha1.HoldNRI, Node{NRI: true, NRIValidator: true}, true, ""},
		{v1alpha1.HoldNRI, Node{NRI: true}, false, "does not run NRI's default validator"},
		{v1alpha1.HoldNRI, Node{NRIValidator: true}, false, "no NRI plugin connected"},
		{v1alpha1.HoldNRI, Node{ChainedCNI: true}, false, "no NRI plugin connected"},
		{"sidecar", Node{NRI: true, ChainedCNI: true}, false, `"sidecar" is unknown`},
	} {
		ok, lacks := Enforceable(c.mode, c.node)
		if ok != c.ok || (c.lacks == "") != (lacks == "") || !strings.Contains(lacks, c.lacks) {
			t.Errorf("%s on %+v: %v %q, want %v %q", c.mode, c.node, ok, lacks, c.ok, c.lacks)
		}
	}
}

// holdPod is a podnet pod as the webhook admitted it: with the wait
// container, NRI's annotation, or neither.
func holdPod(wait bool, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t1", Annotations: map[string]string{v1alpha1.NetworksAnnotation: "data"}}}
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	if wait {
		p.Spec.InitContainers = []corev1.Container{{Name: v1alpha1.WaitContainerName}}
	}
	return p
}

var nriAnnotated = map[string]string{v1alpha1.NRIRequiredPluginsAnnotation: v1alpha1.NRIRequiredPluginsValue}

func TestOfPod(t *testing.T) {
	for _, c := range []struct {
		name    string
		pod     *corev1.Pod
		cluster v1alpha1.HoldMode
		want    v1alpha1.HoldMode
	}{
		{"wait container", holdPod(true, nil), v1alpha1.HoldWaitInitContainer, v1alpha1.HoldWaitInitContainer},
		{"wait container asked for under nri", holdPod(true, nriAnnotated), v1alpha1.HoldNRI, v1alpha1.HoldWaitInitContainer},
		{"nri", holdPod(false, nriAnnotated), v1alpha1.HoldNRI, v1alpha1.HoldNRI},
		{"nri after a switch to wait", holdPod(false, nriAnnotated), v1alpha1.HoldWaitInitContainer, v1alpha1.HoldNRI},
		{"another value is not podnet's", holdPod(false, map[string]string{v1alpha1.NRIRequiredPluginsAnnotation: "[]"}), v1alpha1.HoldNRI, ""},
		{"sandbox setup", holdPod(false, nil), v1alpha1.HoldAttachAtSandboxSetup, v1alpha1.HoldAttachAtSandboxSetup},
		{"opted out of the wait container", holdPod(false, map[string]string{v1alpha1.WaitAnnotation: "false"}), v1alpha1.HoldWaitInitContainer, ""},
		{"created before the switch to nri", holdPod(false, nil), v1alpha1.HoldNRI, ""},
	} {
		if got := OfPod(c.pod, c.cluster); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
