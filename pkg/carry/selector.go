package carry

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// Requirements are what a pod that gets the profile network requires of
// its node: one Exists per need's label key, then the network's
// nodeSelector, one requirement per matchLabels pair (In, its value) and
// per matchExpressions entry. A selector the API would refuse (the CRD
// validates it; this is for profiles made another way) is an error
// naming the field under path.
func Requirements(network *v1alpha1.Network, path *field.Path) ([]corev1.NodeSelectorRequirement, error) {
	var out []corev1.NodeSelectorRequirement
	for _, need := range Needs(network) {
		out = append(out, corev1.NodeSelectorRequirement{Key: need.Key(), Operator: corev1.NodeSelectorOpExists})
	}
	if network.NodeSelector == nil {
		return out, nil
	}
	if errs := validateSelector(network.NodeSelector, path.Child("nodeSelector")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return append(out, selectorRequirements(network.NodeSelector)...), nil
}

// selectorRequirements converts a selector one to one; matchLabels in key
// order, so the same selector always gives the same requirements.
func selectorRequirements(s *v1alpha1.NetworkNodeSelector) []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		out = append(out, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{s.MatchLabels[k]}})
	}
	for _, e := range s.MatchExpressions {
		out = append(out, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOperator(e.Operator), Values: slices.Clone(e.Values)})
	}
	return out
}

// validateSelector refuses what the CRD refuses.
func validateSelector(s *v1alpha1.NetworkNodeSelector, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k, v := range s.MatchLabels {
		p := path.Child("matchLabels").Key(k)
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
	}
	for i, e := range s.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		for _, msg := range validation.IsQualifiedName(e.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), e.Key, msg))
		}
		switch e.Operator {
		case "In", "NotIn":
			if len(e.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), fmt.Sprintf("operator %s needs values", e.Operator)))
			}
		case "Exists", "DoesNotExist":
			if len(e.Values) > 0 {
				errs = append(errs, field.Invalid(p.Child("values"), e.Values, fmt.Sprintf("operator %s takes no values", e.Operator)))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), e.Operator, []string{"In", "NotIn", "Exists", "DoesNotExist"}))
		}
		for j, v := range e.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(p.Child("values").Index(j), v, msg))
			}
		}
	}
	return errs
}

// matches says whether labels satisfy one requirement, as the scheduler
// judges it.
func matches(r corev1.NodeSelectorRequirement, labels map[string]string) bool {
	v, has := labels[r.Key]
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	}
	return false
}
