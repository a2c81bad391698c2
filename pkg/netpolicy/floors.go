package netpolicy

import (
	"reflect"
	"slices"
)

// EvaluateEach gives every pod of one segment its verdict, each under
// the floor of the profile that granted it the network (floors[i] is
// in.Pods[i]'s; nil: none). Profiles may offer one network name with
// different floors: the segment is evaluated once per distinct floor,
// always with all its pods (they are each other's peers whatever profile
// granted them), and each pod takes its verdict from the evaluation of its
// own floor. The problems are those of the policies, the same in every
// evaluation. in.Floor is ignored.
func EvaluateEach(in Input, floors []*Floor) (map[string]Verdict, []Problem) {
	var distinct []*Floor
	group := make([]int, len(in.Pods))
	for i, f := range floors {
		j := slices.IndexFunc(distinct, func(d *Floor) bool { return reflect.DeepEqual(d, f) })
		if j < 0 {
			j = len(distinct)
			distinct = append(distinct, f)
		}
		group[i] = j
	}
	if len(distinct) == 0 {
		distinct = []*Floor{nil} // no pods: the policies' problems all the same
	}
	out := make(map[string]Verdict, len(in.Pods))
	var problems []Problem
	for j, f := range distinct {
		in.Floor = f
		verdicts, ps := Evaluate(in)
		if j == 0 {
			problems = ps
		}
		for i, p := range in.Pods {
			if group[i] == j {
				out[p.Key()] = verdicts[p.Key()]
			}
		}
	}
	return out, problems
}
