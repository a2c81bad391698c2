package simnode

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// DuplicateAddresses counts the addresses that podnet gave more than one
// pod on the same network, from the pods' network-status: each entry past
// the first of a (network, address) pair is one duplicate. The default
// network's entry (eth0, the runtime's address) is not podnet's and is not
// counted; a status that does not decode counts as one duplicate, so that
// an unreadable status never hides one.
func DuplicateAddresses(pods []corev1.Pod) int {
	seen, dup := map[[2]string]bool{}, 0
	for _, p := range pods {
		raw, ok := p.Annotations[v1alpha1.NetworkStatusAnnotation]
		if !ok {
			continue
		}
		var st []v1alpha1.NetworkStatus
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			dup++
			continue
		}
		for _, s := range st {
			if s.Default {
				continue
			}
			for _, ip := range s.IPs {
				k := [2]string{s.Name, ip}
				if seen[k] {
					dup++
				}
				seen[k] = true
			}
		}
	}
	return dup
}
