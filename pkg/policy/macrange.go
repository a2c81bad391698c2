package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// resolveMACs gives an interface its MAC: the static one the tenant asked
// for (allowed by allowStaticMAC, and inside the network's macRange when it
// has one), and the range the agent claims the MAC from. The webhook and
// the agent's re-judgement both come here.
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
	if errs := v1alpha1.ValidateMACRange(field.NewPath("macRange"), r); len(errs) > 0 {
		return nil, fmt.Errorf("has an invalid %s", errs.ToAggregate().Error())
	}
	span, _ := v1alpha1.ParseMACSpan(r.RangeStart, r.RangeEnd) // validated above
	q := span.DefaultMACQuota()
	if r.MaxPerNamespace != nil {
		q = *r.MaxPerNamespace
	}
	return &v1alpha1.ApprovedMACRange{Start: span.At(0).String(), End: span.At(span.Size() - 1).String(), MaxPerNamespace: q}, nil
}

// CheckMACInRange refuses a MAC outside an approved range. The agent calls
// it before it claims a static MAC, with the same words as the webhook.
func CheckMACInRange(mac string, r *v1alpha1.ApprovedMACRange) error {
	span, err := v1alpha1.ParseMACSpan(r.Start, r.End)
	if err != nil {
		return fmt.Errorf("macRange: %w", err)
	}
	if !span.Contains(mac) {
		return fmt.Errorf("mac %s is outside the macRange %s", mac, span)
	}
	return nil
}
