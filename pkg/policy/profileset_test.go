package policy

import (
	"reflect"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
)

// TestDecideFromProfileSetIsTheSame: a decision from profiles prepared
// once (as the webhook keeps them), with Input.Profiles left empty, is the
// decision from the profiles themselves, for approvals, refusals, broken
// profiles, clashes between profiles and quotas alike: nothing in a
// decision reads the profiles past the prepared set.
func TestDecideFromProfileSetIsTheSame(t *testing.T) {
	clashA, clashB := spanning("a", 1001, "pnbr-a"), spanning("b", 2001, "pnbr-b")
	clashB.Spec.Networks[2].Bridge.Uplink.Interface = "up-a"
	quota := telcoData()
	quota.Spec.Networks[0].IPAM.MaxAddressesPerNamespace = i32(2)
	broken := brokenProfile(func(n *v1alpha1.Network) { n.Bridge.Name = "" })
	// Two profiles offering "data" alike, and a third offering it
	// differently: the set compares each pair once and answers every
	// later decision from that.
	twin, differing := telcoData(), telcoData()
	twin.Name, differing.Name = "telco-data-twin", "telco-data-other"
	differing.Spec.Networks[0].Bridge.Name = "pnbr-other"
	for name, profiles := range map[string][]v1alpha1.NetworkProfile{
		"base":    baseProfiles(),
		"broken":  append(baseProfiles(), broken...),
		"clashes": append(baseProfiles(), clashA, clashB),
		"quota":   {quota, telcoUplink()},
		"twins":   {telcoData(), twin, telcoUplink()},
		"differ":  {telcoData(), twin, differing},
		"none":    nil,
	} {
		set := NewProfileSet(profiles)
		for _, annotation := range []string{"data", "data", "data, data, l2@lan0", "broken", "b-uplink", "a-overlay", "uplink", "nope", `[{"interface":"eth0","mtu":8900}]`} {
			pod := podWith(annotation, "cnf")
			want, wantErrs := Decide(Input{Namespace: telcoNamespace(), Pod: pod, Profiles: profiles})
			got, gotErrs := Decide(Input{Namespace: telcoNamespace(), Pod: pod, Prepared: set})
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErrs, wantErrs) {
				t.Errorf("%s, %q: from the set %+v %v, from the profiles %+v %v", name, annotation, got, gotErrs, want, wantErrs)
			}
		}
		if set.Len() != len(profiles) {
			t.Errorf("%s: set of %d profiles, made of %d", name, set.Len(), len(profiles))
		}
	}
}
