package carry

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

var (
	nic  = corev1.NodeSelectorRequirement{Key: "carry.podnet.io/nic.data0", Operator: corev1.NodeSelectorOpExists}
	zone = corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
)

func required(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
}

func term(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: reqs}
}

func TestRequireOnPod(t *testing.T) {
	rackX := corev1.NodeSelectorRequirement{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}
	rackY := corev1.NodeSelectorRequirement{Key: "rack", Operator: corev1.NodeSelectorOpIn, Values: []string{"y"}}
	byName := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}
	preferred := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 1, Preference: term(rackX)}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{}}
	cases := []struct {
		name string
		in   *corev1.Affinity
		want *corev1.Affinity
	}{
		{"none: one term", nil, required(term(nic, zone))},
		{"empty required: one term", required(), required(term(nic, zone))},
		{"AND into each term, never widening", required(term(rackX), term(rackY), byName),
			required(term(rackX, nic, zone), term(rackY, nic, zone), corev1.NodeSelectorTerm{MatchFields: byName.MatchFields, MatchExpressions: []corev1.NodeSelectorRequirement{nic, zone}})},
		{"present already: not twice", required(term(zone, rackX)), required(term(zone, rackX, nic))},
		{"keeps what else the pod has", preferred, func() *corev1.Affinity {
			a := preferred.DeepCopy()
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term(nic, zone)}}
			return a
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.in.DeepCopy()
			got, changed := RequireOnPod(c.in, []corev1.NodeSelectorRequirement{nic, zone})
			if !changed || !apiequality.Semantic.DeepEqual(got, c.want) {
				t.Errorf("RequireOnPod = %v (changed %v), want %v", got, changed, c.want)
			}
			if !reflect.DeepEqual(before, c.in) {
				t.Errorf("the pod's own affinity changed: %v", c.in)
			}
			again, changed := RequireOnPod(got, []corev1.NodeSelectorRequirement{nic, zone})
			if changed || !apiequality.Semantic.DeepEqual(again, got) {
				t.Errorf("a second pass changed it: %v", again)
			}
		})
	}
}

func TestRequireOnPodNothingNeeded(t *testing.T) {
	in := required(term(zone))
	if got, changed := RequireOnPod(in, nil); changed || got != in {
		t.Errorf("a pod that needs nothing changed: %v", got)
	}
	if got, changed := RequireOnPod(nil, nil); changed || got != nil {
		t.Errorf("a pod without affinity got one: %v", got)
	}
}

// FuzzRequireOnPod: whatever terms the pod has, every term afterwards
// keeps all it had and holds every requirement, and a second pass
// changes nothing.
func FuzzRequireOnPod(f *testing.F) {
	f.Add(uint8(0), "rack", "x")
	f.Add(uint8(3), "zone", "a")
	f.Fuzz(func(t *testing.T, nterms uint8, key, value string) {
		var terms []corev1.NodeSelectorTerm
		for i := range int(nterms % 5) {
			r := corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}
			if i%2 == 1 {
				r = zone
			}
			terms = append(terms, term(r))
		}
		in := required(terms...)
		got, _ := RequireOnPod(in, []corev1.NodeSelectorRequirement{nic, zone})
		out := got.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if len(terms) > 0 && len(out) != len(terms) {
			t.Fatalf("%d terms became %d", len(terms), len(out))
		}
		for i, tm := range out {
			for _, want := range []corev1.NodeSelectorRequirement{nic, zone} {
				if !containsReq(tm.MatchExpressions, want) {
					t.Fatalf("term %d lacks %v", i, want)
				}
			}
			if i < len(terms) {
				for _, had := range terms[i].MatchExpressions {
					if !containsReq(tm.MatchExpressions, had) {
						t.Fatalf("term %d lost %v", i, had)
					}
				}
			}
		}
		if _, changed := RequireOnPod(got, []corev1.NodeSelectorRequirement{nic, zone}); changed {
			t.Fatal("second pass changed the affinity")
		}
	})
}

func containsReq(list []corev1.NodeSelectorRequirement, r corev1.NodeSelectorRequirement) bool {
	for _, have := range list {
		if apiequality.Semantic.DeepEqual(have, r) {
			return true
		}
	}
	return false
}
