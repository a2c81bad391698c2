package netpolicy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPolicyFor(t *testing.T) {
	got, err := PolicyFor(" data, t1/fronthaul ,midhaul", "t1")
	if want := []string{"data", "fronthaul", "midhaul"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("PolicyFor = %v, %v; want %v", got, err, want)
	}
	for in, why := range map[string]string{
		"t2/data":   `names namespace "t2"`,
		"data,":     "item 1 is empty",
		"":          "item 0 is empty",
		"t1/Data_1": "is not a network name",
		"t1/a/b":    "is not a network name",
		"/data":     `names namespace ""`,
	} {
		if _, err := PolicyFor(in, "t1"); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("PolicyFor(%q): %v; want an error saying %q", in, err, why)
		}
	}
}

func policyFor(ns, name, annotation string) mnp.MultiNetworkPolicy {
	p := mnp.MultiNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if annotation != "" {
		p.Annotations = map[string]string{PolicyForAnnotation: annotation}
	}
	return p
}

func TestNetworks(t *testing.T) {
	for _, c := range []struct {
		annotation string
		want       []string
		refused    bool
	}{
		{annotation: "", refused: true},
		{annotation: "b, a,tenant/b", want: []string{"a", "b"}},
		{annotation: "other/a", refused: true},
	} {
		p := policyFor("tenant", "p", c.annotation)
		got, err := Networks(&p)
		if (err != nil) != c.refused || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, %v; want %v (refused %v)", c.annotation, got, err, c.want, c.refused)
		}
	}
}

func TestForNetwork(t *testing.T) {
	ps := []mnp.MultiNetworkPolicy{
		policyFor("tenant", "for-a", "a"),
		policyFor("tenant", "for-a-and-b", "b,a"),
		policyFor("tenant", "for-b", "b"),
		policyFor("tenant", "refused", "a,other/a"),
		policyFor("tenant", "none", ""),
	}
	var names []string
	for _, p := range ForNetwork(ps, "a") {
		names = append(names, p.Name)
	}
	if want := []string{"for-a", "for-a-and-b"}; !slices.Equal(names, want) {
		t.Fatalf("policies for a: %v, want %v", names, want)
	}
}
