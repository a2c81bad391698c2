package carry

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// RequireOnPod returns the pod's affinity with reqs ANDed into its
// required node affinity, and whether that changed it. Node selector
// terms are ORed: each requirement goes into every term, so no term the
// pod asked for is widened and each still holds; a pod with no required
// node affinity gets one term of reqs. A requirement already in a term is
// not added again, so a second pass changes nothing. The pod's own
// affinity is not changed (the result is a copy); nil reqs leave it as
// it is.
func RequireOnPod(affinity *corev1.Affinity, reqs []corev1.NodeSelectorRequirement) (*corev1.Affinity, bool) {
	if len(reqs) == 0 {
		return affinity, false
	}
	out := affinity.DeepCopy()
	if out == nil {
		out = &corev1.Affinity{}
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	sel := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(sel.NodeSelectorTerms) == 0 {
		sel.NodeSelectorTerms = []corev1.NodeSelectorTerm{{}}
	}
	changed := false
	for i := range sel.NodeSelectorTerms {
		t := &sel.NodeSelectorTerms[i]
		for _, r := range reqs {
			if !slices.ContainsFunc(t.MatchExpressions, func(have corev1.NodeSelectorRequirement) bool {
				return sameRequirement(have, r)
			}) {
				t.MatchExpressions = append(t.MatchExpressions, *r.DeepCopy())
				changed = true
			}
		}
	}
	if !changed {
		return affinity, false
	}
	return out, true
}

// sameRequirement compares two requirements field by field (no
// reflection: it runs for every requirement of every term of a CREATE).
func sameRequirement(a, b corev1.NodeSelectorRequirement) bool {
	return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values)
}
