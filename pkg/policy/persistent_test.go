package policy

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestDecidePersistent: ipam.persistent reaches the approval, in seconds;
// absent or off, the approval keeps nothing.
func TestDecidePersistent(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *v1alpha1.PersistentIPAM
		want *v1alpha1.ApprovedPersistence
	}{
		{"absent", nil, nil},
		{"off", &v1alpha1.PersistentIPAM{ReleaseAfter: metav1.Duration{Duration: time.Minute}}, nil},
		{"StatefulSets for 10m", &v1alpha1.PersistentIPAM{StatefulSets: true, ReleaseAfter: metav1.Duration{Duration: 10 * time.Minute}},
			&v1alpha1.ApprovedPersistence{StatefulSets: true, ReleaseAfterSeconds: 600}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := telcoData()
			p.Spec.Networks[0].IPAM.Persistent = tc.p
			a, errs := Decide(Input{Namespace: telcoNamespace(), Pod: podWith("data", ""), Profiles: []v1alpha1.NetworkProfile{p}})
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			got := a.Interfaces[0].IPAM.Persistent
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("approved persistence %+v, want %+v", got, tc.want)
			}
		})
	}
}
