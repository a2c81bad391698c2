package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// resolveMACs gives an interface its MAC: the static one the tenant asked
// for (allowed by allowStaticMAC, and inside the network's macRange when it
// has one, and no gateway's), and the network's range. The webhook and
// the agent's re-judgement both come here; the agent claims every static
// MAC, with a range or without (MACClaimRange).
func (l limit) resolveMACs(p *field.Path, want string, n *v1alpha1.Network) (string, *v1alpha1.ApprovedMACRange, field.ErrorList) {
	mac, errs := l.resolveMAC(p, want, n.AllowStaticMAC)
	if n.MACRange == nil || len(errs) > 0 {
		return mac, nil, errs
	}
	r, err := approvedMACRange(n.MACRange)
	if err != nil {
		return "", nil, field.ErrorList{field.Invalid(p, want, l.admin(err.Error()))}
	}
	if mac != "" {
		if err := CheckMACInRange(mac, r); err != nil {
			return "", nil, field.ErrorList{field.Invalid(p, want, l.msg("%v of profile %q", err, l.profile))}
		}
	}
	return mac, r, nil
}

// approvedMACRange resolves a profile's macRange: its ends in canonical
// spelling and its effective quota.
func approvedMACRange(r *v1alpha1.MACRange) (*v1alpha1.ApprovedMACRange, error) {
	if errs := ValidateMACRange(field.NewPath("macRange"), r); len(errs) > 0 {
		return nil, fmt.Errorf("has an invalid %s", errs.ToAggregate().Error())
	}
	span, _ := ParseMACSpan(r.RangeStart, r.RangeEnd) // validated above
	q := span.DefaultMACQuota()
	if r.MaxPerNamespace != nil {
		q = *r.MaxPerNamespace
	}
	return &v1alpha1.ApprovedMACRange{Start: span.At(0).String(), End: span.At(span.Size() - 1).String(), MaxPerNamespace: q}, nil
}

// CheckMACInRange refuses a MAC outside an approved range. The agent calls
// it before it claims a static MAC, with the same words as the webhook.
func CheckMACInRange(mac string, r *v1alpha1.ApprovedMACRange) error {
	span, err := ParseMACSpan(r.Start, r.End)
	if err != nil {
		return fmt.Errorf("macRange: %w", err)
	}
	if !span.Contains(mac) {
		return fmt.Errorf("mac %s is outside the macRange %s", mac, span)
	}
	return nil
}

// addMAC refuses a second interface of the pod with the same static MAC,
// and a pod whose interfaces would claim more MACs of one network's range
// than its quota per namespace: that pod could never attach.
func (u podUsage) addMAC(p *field.Path, a v1alpha1.ApprovedInterface) field.ErrorList {
	var errs field.ErrorList
	if a.MAC != "" {
		key := "mac " + a.MAC // never an address: static keys them by IP
		if prev, dup := u.static[key]; dup {
			errs = append(errs, field.Invalid(p.Child("mac"), a.MAC, fmt.Sprintf("network %q: mac already given to interface %s of this pod", a.Network, prev)))
		}
		u.static[key] = a.Interface
	}
	if r := a.MACRange; r != nil {
		u.macs[a.Network]++
		if r.MaxPerNamespace > 0 && u.macs[a.Network] > int(r.MaxPerNamespace) {
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("network %q: the pod would hold %d MACs of macRange %s-%s, above its quota per namespace (macRange.maxPerNamespace %d of profile %q)",
				a.Network, u.macs[a.Network], r.Start, r.End, r.MaxPerNamespace, a.Profile)))
		}
	}
	return errs
}
