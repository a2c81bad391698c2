package kubectlpodnet

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/netpolicy"
)

// PodFacts is what explain reads about one pod; the API side gathers it.
type PodFacts struct {
	Pod *corev1.Pod
	// NamespaceLabels are the labels of the pod's namespace.
	NamespaceLabels map[string]string
	// NamespaceUnknown is true when the caller may not read the namespace:
	// its opt-in is then judged from the pod alone.
	NamespaceUnknown bool
	// Events are the pod's Events, in any order.
	Events []corev1.Event
	// Claims are the pod's ResourceClaims of podnet's DRA driver.
	Claims []*resourceapi.ResourceClaim
	// AgentReady says whether a ready podnet-agent pod runs on the pod's
	// node; nil when unknown (not scheduled, or the caller may not list
	// pods in the agent's namespace).
	AgentReady *bool
	// Policies are the MultiNetworkPolicies of the pod's namespace, and
	// Profiles the NetworkProfiles (for their floors); PoliciesUnknown is
	// true when the caller may not read them or the API serves none.
	Policies        []mnp.MultiNetworkPolicy
	Profiles        []v1alpha1.NetworkProfile
	PoliciesUnknown bool
}

// Explanation is what `kubectl podnet explain` prints.
type Explanation struct {
	Pod       string `json:"pod"`
	Node      string `json:"node,omitempty"`
	Phase     string `json:"phase,omitempty"`
	Requested string `json:"requested,omitempty"`
	// Approved is the decoded podnet.io/approved, nil when absent.
	Approved *ApprovalView `json:"approved,omitempty"`
	// ApprovalError says why podnet.io/approved could not be decoded.
	ApprovalError string                   `json:"approvalError,omitempty"`
	Attached      []v1alpha1.NetworkStatus `json:"attached,omitempty"`
	// StatusError says why podnet.io/network-status could not be decoded.
	StatusError string               `json:"statusError,omitempty"`
	Condition   *corev1.PodCondition `json:"condition,omitempty"`
	Events      []EventLine          `json:"events,omitempty"`
	// Claims are the pod's ResourceClaims of podnet's DRA driver.
	Claims []ClaimExplanation `json:"claims,omitempty"`
	// Policy says which policies isolate each approved network; nil when
	// they could not be read.
	Policy []PolicyLine `json:"policy,omitempty"`
	Ready  bool         `json:"ready"`
	// Reason is the one most likely reason the pod is not ready.
	Reason string `json:"reason,omitempty"`
}

// ApprovalView is the approval as far as this version knows it; fields a
// newer webhook adds are kept in Extra, so nothing written is hidden.
type ApprovalView struct {
	v1alpha1.Approval
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// EventLine is one podnet Event of the pod.
type EventLine struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Count   int32  `json:"count,omitempty"`
	Source  string `json:"source"`
}

// maxEvents is how many of the latest podnet Events explain shows.
const maxEvents = 5

// explainPod turns the facts into the explanation, diagnosis included.
func explainPod(f PodFacts) Explanation {
	p := f.Pod
	e := Explanation{
		Pod:       p.Namespace + "/" + p.Name,
		Node:      p.Spec.NodeName,
		Phase:     string(p.Status.Phase),
		Requested: p.Annotations[v1alpha1.NetworksAnnotation],
		Condition: condition(p, v1alpha1.NetworksReadyCondition),
		Events:    podnetEvents(f.Events),
	}
	if raw, ok := p.Annotations[v1alpha1.ApprovedAnnotation]; ok {
		a, err := decodeApproval(raw)
		if err != nil {
			e.ApprovalError = err.Error()
		}
		e.Approved = a
	}
	if raw, ok := p.Annotations[v1alpha1.NetworkStatusAnnotation]; ok && raw != "" {
		if err := json.Unmarshal([]byte(raw), &e.Attached); err != nil {
			e.StatusError = fmt.Sprintf("%s is not valid JSON: %v", v1alpha1.NetworkStatusAnnotation, err)
		}
		// The status starts with the cluster network's eth0, as Multus
		// writes it; podnet attached the rest.
		e.Attached = slices.DeleteFunc(e.Attached, func(s v1alpha1.NetworkStatus) bool { return s.Default })
	}
	for _, c := range f.Claims {
		e.Claims = append(e.Claims, explainClaim(c))
	}
	if !f.PoliciesUnknown && e.ApprovalError == "" {
		e.Policy = explainPolicies(e.Approved, netpolicy.Pod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels}, f.Policies, f.Profiles)
	}
	e.Ready = e.Condition != nil && e.Condition.Status == corev1.ConditionTrue
	e.Reason = diagnose(f, e)
	return e
}

// knownApprovalFields are the JSON keys v1alpha1.Approval decodes.
var knownApprovalFields = map[string]bool{
	"namespace": true, "serviceAccount": true, "requestHash": true,
	"profiles": true, "primaryMTU": true, "interfaces": true,
}

// decodeApproval reads an approval leniently: unknown fields are kept
// aside rather than refused, since the webhook may be newer than the
// plugin. It never checks the signature (only the agent holds the key).
func decodeApproval(raw string) (*ApprovalView, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(raw), &fields); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", v1alpha1.ApprovedAnnotation, err)
	}
	v := &ApprovalView{}
	if err := json.Unmarshal([]byte(raw), &v.Approval); err != nil {
		return nil, fmt.Errorf("%s does not decode as an approval: %w", v1alpha1.ApprovedAnnotation, err)
	}
	for k, val := range fields {
		if !knownApprovalFields[k] {
			if v.Extra == nil {
				v.Extra = map[string]json.RawMessage{}
			}
			v.Extra[k] = val
		}
	}
	return v, nil
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podnetEvents keeps the Events podnet-agent wrote, latest last, with
// repeats of the same event in a row folded into one line with their
// count, at most maxEvents lines.
func podnetEvents(events []corev1.Event) []EventLine {
	var mine []corev1.Event
	for _, ev := range events {
		if eventSource(ev) == v1alpha1.AgentName {
			mine = append(mine, ev)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return eventTime(mine[i]).Before(eventTime(mine[j])) })
	var out []EventLine
	for _, ev := range mine {
		line := EventLine{Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: eventCount(ev), Source: eventSource(ev)}
		if n := len(out); n > 0 && out[n-1].Type == line.Type && out[n-1].Reason == line.Reason && out[n-1].Message == line.Message {
			out[n-1].Count += line.Count
			continue
		}
		out = append(out, line)
	}
	if len(out) > maxEvents {
		out = out[len(out)-maxEvents:]
	}
	return out
}

// eventCount is how many times an Event happened, whichever API wrote it.
func eventCount(ev corev1.Event) int32 {
	switch {
	case ev.Series != nil && ev.Series.Count > 0:
		return ev.Series.Count
	case ev.Count > 0:
		return ev.Count
	}
	return 1
}

// eventSource is the component that wrote an Event, in either the old
// (source) or the new (reportingController) field.
func eventSource(ev corev1.Event) string {
	if ev.Source.Component != "" {
		return ev.Source.Component
	}
	return ev.ReportingController
}
