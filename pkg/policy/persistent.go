package policy

import "podnet.io/podnet/api/v1alpha1"

// approvePersistence is what an approval carries of a network's
// ipam.persistent: nil unless StatefulSet pods keep their addresses.
func approvePersistence(p *v1alpha1.PersistentIPAM) *v1alpha1.ApprovedPersistence {
	if p == nil || !p.StatefulSets {
		return nil
	}
	secs := max(p.ReleaseAfter.Seconds(), 0)
	return &v1alpha1.ApprovedPersistence{StatefulSets: true, ReleaseAfterSeconds: int32(min(secs, 604800))}
}
