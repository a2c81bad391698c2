package holdchoice

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestHoldChoiceCount: only enforced counts; an unlabelled node counts
// among the nodes; the trimmed cache keeps the label and drops the rest.
func TestHoldChoiceCount(t *testing.T) {
	node := func(v string) metav1.PartialObjectMetadata {
		n := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{"big": "x"}, Labels: map[string]string{"other": "y"}}}
		if v != "" {
			n.Labels[v1alpha1.NodeHoldNRILabel] = v
		}
		return n
	}
	nodes := []metav1.PartialObjectMetadata{node("enforced"), node(""), node("unenforced"), node("unknown"), node("enforced")}
	if all, enforced := countHoldNodes(nodes); all != 5 || enforced != 2 {
		t.Errorf("countHoldNodes = %d, %d; want 5, 2", all, enforced)
	}
	got := holdChoiceAnnotations(countHoldNodes(nodes))
	if got[v1alpha1.HoldChoiceAnnotation] != "waitInitContainer" || got[v1alpha1.HoldChoiceNodesAnnotation] != "5" || got[v1alpha1.HoldChoiceEnforcedAnnotation] != "2" {
		t.Errorf("annotations %v", got)
	}
	n := node("enforced")
	out, err := TrimNodeMeta(&n)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*metav1.PartialObjectMetadata)
	if len(m.Labels) != 1 || m.Labels[v1alpha1.NodeHoldNRILabel] != "enforced" || m.Annotations != nil {
		t.Errorf("trimmed node %+v", m.ObjectMeta)
	}
}
