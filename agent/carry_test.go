package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/carry"
)

func TestCannotCarry(t *testing.T) {
	profiles := []v1alpha1.NetworkProfile{{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
			{Name: "up", Macvlan: &v1alpha1.MacvlanNetwork{Master: "data0"}},
			{Name: "local", Bridge: &v1alpha1.BridgeNetwork{Name: "br0"}},
		}},
	}}
	appr := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Network: "up", Profile: "p"},
		{Interface: "net2", Network: "local", Profile: "p"},
		{Interface: "net3", Network: "gone", Profile: "p"},
	}}
	full := carry.Node{Links: map[string]bool{"data0": true}, Modules: map[string]bool{"macvlan": true}}
	if msg := cannotCarry("n1", full, profiles, appr); msg != "" {
		t.Errorf("a node with data0 and macvlan: %q", msg)
	}
	lacking := carry.Node{Modules: map[string]bool{"macvlan": true}}
	want := `node n2 cannot carry network "up" (interface net1, profile p) needs host link "data0"; no network attached`
	if msg := cannotCarry("n2", lacking, profiles, appr); msg != want {
		t.Errorf("message = %q, want %q", msg, want)
	}
}
