package e2e

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// vrfProfile lets the attack namespace put network vrf-data's interfaces
// into VRFs with tables 1000-1999.
const vrfProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: atk-vrf}
spec:
  namespaceSelector:
    matchLabels: {podnet.io/tenant: x}
  networks:
  - name: vrf-data
    bridge: {name: pnbr-atkv}
    vrf: {tables: ["1000-1999"]}
`

// testVRFAttacks: a tenant who names a VRF table the profile does not
// allow, or a VRF on a network without vrf, is refused at admission with
// the field, the value and the profile's limit; an admin cannot allow the
// kernel's main table. (The VRF attach itself needs the vrf module, which
// the test host lacks: TestRootVRF proves it in the kernel VM stage.)
func (s *suite) testVRFAttacks(t *testing.T, m client.Client) {
	s.apply(t, vrfProfile)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "networkprofile", "atk-vrf", "--wait=false") })
	// The webhook reads profiles from its cache: until it has seen
	// atk-vrf, every request below would be refused for another reason.
	s.waitWebhookOffers(t, attackNS, "vrf-data", "pnbr-atkv")
	for _, tc := range []struct {
		name, request string
		want          []string
	}{
		{"vrf-table", `[{"name":"vrf-data","vrf":{"vrfname":"red","table":2500}}]`,
			[]string{"vrf.table", "2500", `not allowed by profile "atk-vrf"`, "vrf.tables 1000-1999"}},
		{"vrf-main-table", `[{"name":"vrf-data","vrf":{"vrfname":"red","table":254}}]`,
			[]string{"vrf.table", "254", "252-255"}},
		{"vrf-no-grant", `[{"name":"data","vrf":{"vrfname":"red","table":1001}}]`,
			[]string{"vrf", `profile "atk" does not let this network's interfaces into a VRF`}},
	} {
		p := attackPod(tc.name, attackNS, map[string]string{podnetv1.NetworksAnnotation: tc.request})
		err := m.Create(context.Background(), p)
		if err == nil {
			s.kubectl(t, "", "-n", attackNS, "delete", "pod", tc.name, "--wait=false")
			t.Fatalf("%s: a pod asking %s was admitted", tc.name, tc.request)
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: denial %q does not say %q", tc.name, err, want)
			}
		}
	}
	bad := strings.Replace(strings.Replace(vrfProfile, "atk-vrf", "atk-vrf-main", 1), `"1000-1999"`, `"200-300"`, 1)
	if _, err := s.kubectlErr(bad, "apply", "-f", "-"); err == nil || !strings.Contains(err.Error(), "must not include 252-255") {
		t.Errorf("a profile allowing tables 200-300: err = %v, want the CRD's refusal naming 252-255", err)
	}
}
