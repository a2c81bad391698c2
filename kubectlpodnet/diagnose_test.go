package kubectlpodnet

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

const testApproval = `{"namespace":"t1","serviceAccount":"default","requestHash":"ab","profiles":[{"name":"telco","generation":3}],"interfaces":[{"interface":"net1","network":"data","profile":"telco","kind":"bridge","bridge":"pnbr-data","ipam":{"pools":["192.168.100.0/24"]}}]}`

// stuckPod is a scheduled pod with a sandbox, an approved request and no
// word from the agent yet; each case changes one thing.
func stuckPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "p", Annotations: map[string]string{
			v1alpha1.NetworksAnnotation: "data",
			v1alpha1.ApprovedAnnotation: testApproval,
		}},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue},
		}},
	}
}

func withCondition(p *corev1.Pod, status corev1.ConditionStatus, reason, msg string) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: v1alpha1.NetworksReadyCondition, Status: status, Reason: reason, Message: msg})
	return p
}

func agentEvent(typ, reason, msg string, at time.Time) corev1.Event {
	return corev1.Event{Type: typ, Reason: reason, Message: msg, ReportingController: v1alpha1.AgentName, EventTime: metav1.NewMicroTime(at)}
}

func boolPtr(b bool) *bool { return &b }

func TestDiagnose(t *testing.T) {
	enabled := map[string]string{v1alpha1.EnabledLabel: "true"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		f    func() PodFacts
		want string // substring of the reason; "" = ready, no reason
	}{
		{"ready", func() PodFacts {
			return PodFacts{Pod: withCondition(stuckPod(), corev1.ConditionTrue, v1alpha1.ReasonAttached, ""), NamespaceLabels: enabled}
		}, ""},
		{"no request", func() PodFacts {
			p := stuckPod()
			delete(p.Annotations, v1alpha1.NetworksAnnotation)
			delete(p.Annotations, v1alpha1.ApprovedAnnotation)
			return PodFacts{Pod: p, NamespaceLabels: enabled}
		}, "asks for no networks"},
		{"namespace not opted in", func() PodFacts {
			return PodFacts{Pod: stuckPod(), NamespaceLabels: map[string]string{"tenant": "a"}}
		}, `namespace "t1" is not opted in`},
		{"namespace unreadable: judged from the pod", func() PodFacts {
			return PodFacts{Pod: stuckPod(), NamespaceUnknown: true, AgentReady: boolPtr(false)}
		}, `no podnet-agent is ready on node "n1"`},
		{"no approval", func() PodFacts {
			p := stuckPod()
			delete(p.Annotations, v1alpha1.ApprovedAnnotation)
			return PodFacts{Pod: p, NamespaceLabels: enabled}
		}, "no approval: the webhook did not approve"},
		{"approval not JSON", func() PodFacts {
			p := stuckPod()
			p.Annotations[v1alpha1.ApprovedAnnotation] = "{broken"
			return PodFacts{Pod: p, NamespaceLabels: enabled}
		}, "invalid approval: podnet.io/approved is not a JSON object"},
		{"agent refused the approval", func() PodFacts {
			return PodFacts{Pod: withCondition(stuckPod(), corev1.ConditionFalse, v1alpha1.ReasonInvalidApproval, "signature does not verify"), NamespaceLabels: enabled}
		}, "invalid approval: the agent refused it: signature does not verify"},
		{"ipam exhausted", func() PodFacts {
			return PodFacts{Pod: withCondition(stuckPod(), corev1.ConditionFalse, v1alpha1.ReasonIPAMFailed, `network "data": pool 192.168.100.0/30 exhausted`), NamespaceLabels: enabled}
		}, "no address could be reserved (pool exhausted"},
		{"quota exceeded", func() PodFacts {
			return PodFacts{Pod: withCondition(stuckPod(), corev1.ConditionFalse, v1alpha1.ReasonQuotaExceeded, `namespace "t1" already holds 2 addresses of pool 192.168.100.0/24`), NamespaceLabels: enabled}
		}, "its quota there (ipam.maxAddressesPerNamespace) allows; the pod attaches once one of them is freed"},
		{"node cannot carry", func() PodFacts {
			return PodFacts{Pod: withCondition(stuckPod(), corev1.ConditionFalse, v1alpha1.ReasonNodeCannotCarry, `node n1 cannot carry network "up" (interface net1, profile p) needs host link "data0"`), NamespaceLabels: enabled}
		}, `node cannot carry its networks (the pod named its node, or the node lost a NIC since)`},
		{"attach failed, from the latest event", func() PodFacts {
			return PodFacts{Pod: stuckPod(), NamespaceLabels: enabled, AgentReady: boolPtr(true), Events: []corev1.Event{
				agentEvent(corev1.EventTypeWarning, v1alpha1.ReasonAttachFailed, "create bridge: no vlan_filtering", t0.Add(time.Second)),
				agentEvent(corev1.EventTypeWarning, v1alpha1.ReasonIPAMFailed, "older failure", t0),
			}}
		}, "failed to attach the networks: create bridge: no vlan_filtering"},
		{"a later success outdates a failure event", func() PodFacts {
			return PodFacts{Pod: stuckPod(), NamespaceLabels: enabled, AgentReady: boolPtr(true), Events: []corev1.Event{
				agentEvent(corev1.EventTypeWarning, v1alpha1.ReasonAttachFailed, "old", t0),
				agentEvent(corev1.EventTypeNormal, v1alpha1.ReasonAttached, "ok", t0.Add(time.Second)),
			}}
		}, `waiting for podnet-agent on node "n1"`},
		{"not scheduled", func() PodFacts {
			p := stuckPod()
			p.Spec.NodeName = ""
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/2 nodes are available"}}
			return PodFacts{Pod: p, NamespaceLabels: enabled}
		}, "not scheduled: 0/2 nodes are available"},
		{"no agent on the node", func() PodFacts {
			return PodFacts{Pod: stuckPod(), NamespaceLabels: enabled, AgentReady: boolPtr(false)}
		}, `no podnet-agent is ready on node "n1"`},
		{"sandbox not created", func() PodFacts {
			p := stuckPod()
			p.Status.Conditions = p.Status.Conditions[:1]
			return PodFacts{Pod: p, NamespaceLabels: enabled, AgentReady: boolPtr(true)}
		}, "sandbox is not created yet"},
		{"agent silent so far", func() PodFacts {
			return PodFacts{Pod: stuckPod(), NamespaceLabels: enabled, AgentReady: boolPtr(true)}
		}, "has not reported on this pod yet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := explainPod(c.f())
			if c.want == "" {
				if e.Reason != "" || !e.Ready {
					t.Fatalf("want ready without reason, got ready=%v reason %q", e.Ready, e.Reason)
				}
				return
			}
			if e.Ready || !strings.Contains(e.Reason, c.want) {
				t.Fatalf("reason %q\nwant it to contain %q", e.Reason, c.want)
			}
		})
	}
}

// TestDecodeApprovalKeepsUnknownFields: a newer webhook's fields (issue
// time, key id) are shown, not refused.
func TestDecodeApprovalKeepsUnknownFields(t *testing.T) {
	raw := strings.Replace(testApproval, `{"namespace"`, `{"issuedAt":"2026-11-23T12:00:00Z","keyID":"k1","namespace"`, 1)
	a, err := decodeApproval(raw)
	if err != nil {
		t.Fatal(err)
	}
	if a.Profiles[0].Generation != 3 || len(a.Interfaces) != 1 || a.Interfaces[0].Bridge != "pnbr-data" {
		t.Fatalf("decoded %+v", a.Approval)
	}
	if string(a.Extra["keyID"]) != `"k1"` || string(a.Extra["issuedAt"]) != `"2026-11-23T12:00:00Z"` || len(a.Extra) != 2 {
		t.Fatalf("extra %v", a.Extra)
	}
	var b strings.Builder
	if err := writeExplain(&b, explainPod(PodFacts{Pod: withApproval(raw), NamespaceLabels: map[string]string{v1alpha1.EnabledLabel: "true"}})); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`keyID: "k1"`, "telco (generation 3)", "net1", "bridge pnbr-data, ips from 192.168.100.0/24"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("explain output lacks %q:\n%s", want, b.String())
		}
	}
}

func withApproval(raw string) *corev1.Pod {
	p := stuckPod()
	p.Annotations[v1alpha1.ApprovedAnnotation] = raw
	return p
}

// TestPodnetEventsLatestOnly keeps only the agent's events, the latest
// maxEvents, oldest first, with repeats in a row folded into one.
func TestPodnetEventsLatestOnly(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var evs []corev1.Event
	for i := 7; i >= 0; i-- {
		evs = append(evs, agentEvent(corev1.EventTypeWarning, v1alpha1.ReasonAttachFailed, string(rune('a'+i)), t0.Add(time.Duration(i)*time.Second)))
	}
	evs = append(evs, agentEvent(corev1.EventTypeWarning, v1alpha1.ReasonAttachFailed, "h", t0.Add(9*time.Second)))
	evs = append(evs, corev1.Event{Reason: "Scheduled", Source: corev1.EventSource{Component: "default-scheduler"}, LastTimestamp: metav1.NewTime(t0.Add(time.Hour))})
	got := podnetEvents(evs)
	var msgs []string
	for _, e := range got {
		msgs = append(msgs, e.Message)
	}
	if strings.Join(msgs, "") != "defgh" || got[4].Count != 2 || got[3].Count != 1 {
		t.Fatalf("events %+v, want d..h, h twice", got)
	}
}
