package webhook

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// denialMessage is what the tenant reads in kubectl's error and in a
// ReplicaSet's FailedCreate event. policy.Decide's errors name the network,
// field, value and profile limit, and its last error lists what the
// namespace may ask for instead (policy.Offer); this only puts them in one
// sentence per error, without the brackets of an aggregate.
func denialMessage(pod *corev1.Pod, errs field.ErrorList) string {
	return refusal(pod, "networks refused: ", errs)
}

// refusal is "pod NAME: " and lead, then one sentence per error.
func refusal(pod *corev1.Pod, lead string, errs field.ErrorList) string {
	var b strings.Builder
	b.WriteString("pod ")
	b.WriteString(podName(pod))
	b.WriteString(": ")
	b.WriteString(lead)
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}
