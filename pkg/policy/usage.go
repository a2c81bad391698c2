package policy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// podUsage finds clashes between a pod's interfaces that each look fine on
// their own: the same static address twice, or two VLAN subinterfaces of
// the same link and VLAN (the kernel allows only one).
type podUsage struct {
	static map[string]string
	vlans  map[string]string
}

func newPodUsage() podUsage {
	return podUsage{static: map[string]string{}, vlans: map[string]string{}}
}

func (u podUsage) add(p *field.Path, a v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	if a.Kind == v1alpha1.KindVLAN {
		key := fmt.Sprintf("%s.%d", a.Master, a.VLAN)
		if prev, dup := u.vlans[key]; dup {
			errs = append(errs, field.Invalid(p.Child("vlan"), a.VLAN, fmt.Sprintf("network %q: interface %s already is the pod's subinterface of %s for this vlan (one per link and vlan)", a.Network, prev, a.Master)))
		}
		u.vlans[key] = a.Interface
	}
	if a.IPAM != nil {
		for i, s := range a.IPAM.Static {
			addr := strings.SplitN(s, "/", 2)[0]
			if prev, dup := u.static[addr]; dup {
				errs = append(errs, field.Invalid(p.Child("ips").Index(i), s, fmt.Sprintf("network %q: address already given to interface %s of this pod", a.Network, prev)))
			}
			u.static[addr] = a.Interface
		}
	}
	return errs
}
