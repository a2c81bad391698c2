package nodecarry

import (
	"reflect"
	"testing"

	"podnet.io/podnet/pkg/carry"
)

func TestPlanLabels(t *testing.T) {
	nic := carry.Need{What: carry.NeedLink, Name: "data0"}
	mod := carry.Need{What: carry.NeedModule, Name: "macvlan"}
	cases := []struct {
		name      string
		current   map[string]string
		satisfied []carry.Need
		want      map[string]any
	}{
		{"adds what it satisfies", map[string]string{"zone": "a"}, []carry.Need{nic, mod},
			map[string]any{nic.Key(): "true", mod.Key(): "true"}},
		{"removes what it no longer does, never other labels", map[string]string{"zone": "a", nic.Key(): "true", mod.Key(): "true", "podnet.io/other": "x"}, []carry.Need{mod},
			map[string]any{nic.Key(): nil}},
		{"repairs a changed value", map[string]string{nic.Key(): "false"}, []carry.Need{nic},
			map[string]any{nic.Key(): "true"}},
		{"nothing to do", map[string]string{nic.Key(): "true", "zone": "a"}, []carry.Need{nic}, nil},
		{"no labels, nothing satisfied", nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := planLabels(c.current, c.satisfied)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("planLabels = %v, want %v", got, c.want)
			}
			after := applyLabels(c.current, got)
			if again := planLabels(after, c.satisfied); again != nil {
				t.Errorf("after the changes, still %v", again)
			}
			for k, v := range c.current {
				if !isCarryKey(k) && after[k] != v {
					t.Errorf("label %s changed to %q", k, after[k])
				}
			}
		})
	}
}
