package netpolicy

import (
	"reflect"
	"strings"
	"testing"
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
