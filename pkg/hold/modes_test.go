package hold

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold/holdtest"
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

func TestOfPod(t *testing.T) {
	for _, c := range []struct {
		name    string
		pod     *corev1.Pod
		cluster v1alpha1.HoldMode
		want    v1alpha1.HoldMode
	}{
		{"wait container", holdtest.Pod(true, nil), v1alpha1.HoldWaitInitContainer, v1alpha1.HoldWaitInitContainer},
		{"wait container asked for under nri", holdtest.Pod(true, holdtest.NRIAnnotated), v1alpha1.HoldNRI, v1alpha1.HoldWaitInitContainer},
		{"nri", holdtest.Pod(false, holdtest.NRIAnnotated), v1alpha1.HoldNRI, v1alpha1.HoldNRI},
		{"nri after a switch to wait", holdtest.Pod(false, holdtest.NRIAnnotated), v1alpha1.HoldWaitInitContainer, v1alpha1.HoldNRI},
		{"another value is not podnet's", holdtest.Pod(false, map[string]string{v1alpha1.NRIRequiredPluginsAnnotation: "[]"}), v1alpha1.HoldNRI, ""},
		{"sandbox setup", holdtest.Pod(false, nil), v1alpha1.HoldAttachAtSandboxSetup, v1alpha1.HoldAttachAtSandboxSetup},
		{"opted out of the wait container", holdtest.Pod(false, map[string]string{v1alpha1.WaitAnnotation: "false"}), v1alpha1.HoldWaitInitContainer, ""},
		{"created before the switch to nri", holdtest.Pod(false, nil), v1alpha1.HoldNRI, ""},
	} {
		if got := OfPod(c.pod, c.cluster); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestUsageNamesEverySetting: --hold-pods describes auto and every mode of
// the table, each with what it needs.
func TestUsageNamesEverySetting(t *testing.T) {
	u := Usage()
	for _, m := range Settings {
		if !strings.Contains(u, string(m)+" (") {
			t.Errorf("usage does not describe %s: %s", m, u)
		}
	}
	for _, e := range table {
		if e.Doc == "" || !strings.Contains(u, e.Doc) {
			t.Errorf("mode %s: doc %q missing from the usage", e.Name, e.Doc)
		}
	}
}
