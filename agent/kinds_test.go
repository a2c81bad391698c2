package agent

import (
	"slices"
	"testing"

	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
)

// TestEveryAPIKindHasADataplaneKind holds the policy's table of network
// kinds against the dataplane's: an approval of any kind must be one the
// agent can build, and the dataplane must build nothing the API cannot ask
// for.
func TestEveryAPIKindHasADataplaneKind(t *testing.T) {
	var api []string
	for _, k := range policy.NetworkKinds() {
		api = append(api, string(k))
	}
	var dp []string
	for _, k := range dataplane.Kinds() {
		dp = append(dp, string(k))
	}
	slices.Sort(api)
	for _, k := range api {
		if !slices.Contains(dp, k) {
			t.Errorf("API kind %q has no dataplane kind (dataplane makes %v)", k, dp)
		}
	}
	for _, k := range dp {
		if !slices.Contains(api, k) {
			t.Errorf("dataplane kind %q is no API kind (the API offers %v)", k, api)
		}
	}
	if len(api) == 0 {
		t.Fatal("the policy lists no kinds")
	}
}
