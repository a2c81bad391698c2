package infocache

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"reflect"
	"strconv"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"podnet.io/podnet/api/v1alpha1"
)

// fullPod is a pod with much that the controller does not need.
func fullPod(name, approval string) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name, UID: types.UID("u-" + name), ResourceVersion: "7",
			Labels:      map[string]string{"app": "x"},
			Annotations: map[string]string{"other": "y", v1alpha1.ApprovedSignatureAnnotation: "sig"}},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "i"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1"},
	}
	if approval != "" {
		p.Annotations[v1alpha1.ApprovedAnnotation] = approval
	}
	return p
}

const approval = `{"namespace":"t1","interfaces":[{"interface":"net1","network":"data","profile":"grant","kind":"bridge","bridge":"br","mtu":9000},{"interface":"net2","network":"up","profile":"grant","kind":"macvlan","master":"eth1"}]}`

// TestPodInfoKeepsWhatClaimsNeed: a pod is reduced to its identity, node,
// the interface/network pairs of its approval with their profiles and
// reported addresses and their address spaces, and (on a network only) its labels, and nothing
// else; an approval this version cannot read still covers every claim, a
// missing one none; the names and label sets every pod shares are
// interned.
func TestPodInfoKeepsWhatClaimsNeed(t *testing.T) {
	got := NewPodInfo(fullPod("p", approval))
	want := &PodInfo{Namespace: "t1", Name: "p", UID: "u-p", Node: "n1", Approval: Approved,
		Interfaces: []Attachment{{Interface: "net1", Network: "data", Profile: "grant", Space: "br.bridge"}, {Interface: "net2", Network: "up", Profile: "grant", Space: "eth1.link"}},
		Labels:     "app=x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PodInfo %+v, want %+v", got, want)
	}
	// The MACs the agent reported, for the kinds whose interfaces each
	// hold their own: not ipvlan's, which share their parent's.
	withStatus := fullPod("p", `{"interfaces":[{"interface":"net1","network":"data","kind":"bridge"},{"interface":"net2","network":"up","kind":"macvlan"},{"interface":"net3","network":"l3","kind":"ipvlan"}]}`)
	withStatus.Annotations[v1alpha1.NetworkStatusAnnotation] = `[{"name":"pods","interface":"eth0","mac":"02:00:00:00:00:09","default":true},` +
		`{"name":"t1/data","interface":"net1","mac":"02:00:00:00:00:01"},{"name":"t1/up","interface":"net2","mac":"not a mac"},{"name":"t1/l3","interface":"net3","mac":"02:00:00:00:00:03"}]`
	macs := NewPodInfo(withStatus).Interfaces
	if len(macs) != 3 || macs[0].MAC != [6]byte{2, 0, 0, 0, 0, 1} || macs[1].MAC != ([6]byte{}) || macs[2].MAC != ([6]byte{}) {
		t.Errorf("interfaces with the pod's network-status: %+v; want net1's MAC only", macs)
	}
	// The addresses the agent reported, of every kind, with or without a
	// prefix length; what is not an address is left out.
	withStatus.Annotations[v1alpha1.NetworkStatusAnnotation] = `[{"name":"pods","interface":"eth0","ips":["10.0.0.1"],"default":true},` +
		`{"name":"t1/data","interface":"net1","ips":["10.1.0.7","fd00::7/64"]},{"name":"t1/up","interface":"net2","ips":["nope"]},{"name":"t1/l3","interface":"net3","ips":["10.3.0.7"]}]`
	addrs := NewPodInfo(withStatus).Interfaces
	if want := []netip.Addr{netip.MustParseAddr("10.1.0.7"), netip.MustParseAddr("fd00::7")}; !reflect.DeepEqual(addrs[0].Addresses, want) ||
		addrs[1].Addresses != nil || !reflect.DeepEqual(addrs[2].Addresses, []netip.Addr{netip.MustParseAddr("10.3.0.7")}) {
		t.Errorf("addresses with the pod's network-status: %+v", addrs)
	}
	// A PodInfo holds nothing else: adding a field must be a choice.
	if n := reflect.TypeFor[PodInfo]().NumField(); n != 7 {
		t.Errorf("PodInfo has %d fields, want 7", n)
	}
	if n := reflect.TypeFor[Attachment]().NumField(); n != 6 {
		t.Errorf("Attachment has %d fields, want 6", n)
	}
	other := NewPodInfo(fullPod("q", approval))
	if unsafe.StringData(other.Node) != unsafe.StringData(got.Node) || unsafe.StringData(other.Interfaces[0].Network) != unsafe.StringData(got.Interfaces[0].Network) ||
		unsafe.StringData(other.Interfaces[0].Profile) != unsafe.StringData(got.Interfaces[0].Profile) ||
		unsafe.StringData(other.Interfaces[0].Space) != unsafe.StringData(got.Interfaces[0].Space) || unsafe.StringData(other.Labels) != unsafe.StringData(got.Labels) {
		t.Error("node, network, profile and space names and label sets of two pods are not shared")
	}
	several := fullPod("p", approval)
	several.Labels = map[string]string{"tier": "db", "app": "x", "example.com/role": ""}
	if p := NewPodInfo(several); p.Labels != "app=x,example.com/role=,tier=db" || !reflect.DeepEqual(p.LabelSet(), several.Labels) {
		t.Errorf("labels %q read back as %v, want %v", p.Labels, p.LabelSet(), several.Labels)
	}

	if p := NewPodInfo(fullPod("p", "not json")); p.Approval != UnreadableApproval || p.Labels != "" {
		t.Errorf("an unreadable approval reads as %+v", p)
	}
	if p := NewPodInfo(fullPod("p", "")); p.Approval != NoApproval || p.Labels != "" || p.LabelSet() != nil {
		t.Errorf("a pod without approval reads as %+v", p)
	}
	if p := NewPodInfo(fullPod("p", `{"interfaces":[]}`)); p.Approval != Approved || p.Labels != "" {
		t.Errorf("a pod approved no interface keeps its labels: %+v", p)
	}

	// The informer's transform reduces pods, and leaves PodInfos and
	// tombstones as they are.
	if out, _ := toPodInfo(fullPod("p", approval)); !reflect.DeepEqual(out, want) {
		t.Errorf("transform gave %+v", out)
	}
	if out, _ := toPodInfo(want); out != any(want) {
		t.Errorf("transform changed a PodInfo: %+v", out)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "t1/p", Obj: want}
	if out, _ := toPodInfo(tomb); out != any(tomb) {
		t.Errorf("transform changed a tombstone: %+v", out)
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(want); err != nil || key != "t1/p" {
		t.Errorf("key %q, %v; want t1/p", key, err)
	}
}

// TestDecodePodPage: a page of a pod list, as the API server writes it,
// decodes to the same PodInfos as the Pods themselves (labels, addresses
// and profiles included), with its resource version and continue token.
func TestDecodePodPage(t *testing.T) {
	pods := []*corev1.Pod{fullPod("a", approval), fullPod("b", "{"), fullPod("c", ""), fullPod("d", approval)}
	pods[0].Annotations[v1alpha1.NetworkStatusAnnotation] = `[{"name":"t1/data","interface":"net1","mac":"02:00:00:00:00:01","ips":["10.1.0.7","fd00::7"]}]`
	pods[0].Labels["tier"] = "db"
	pods[3].Labels = nil
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for _, p := range pods {
		list.Items = append(list.Items, *p)
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	page, err := decodePodPage(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if page.Metadata.ResourceVersion != "42" || page.Metadata.Continue != "next" || len(page.Items) != len(pods) {
		t.Fatalf("page metadata %+v, %d items", page.Metadata, len(page.Items))
	}
	for i, p := range pods {
		if got, err := page.Items[i].podInfo(); err != nil || !reflect.DeepEqual(got, NewPodInfo(p)) {
			t.Errorf("pod %s decoded as %+v, %v; want %+v", p.Name, got, err, NewPodInfo(p))
		}
	}
	if a, _ := page.Items[0].podInfo(); a.Labels != "app=x,tier=db" || len(a.Interfaces[0].Addresses) != 2 || a.Interfaces[0].Profile != "grant" {
		t.Errorf("pod a decoded as %+v", a)
	}
	if _, err := decodePodPage(bytes.NewReader([]byte(`{"items":[{"metadata":{"uid":7}}]}`))); err == nil {
		t.Error("a page of the wrong shape decoded")
	}
	bad, err := decodePodPage(bytes.NewReader([]byte(`{"items":[{"metadata":{"name":"x","labels":[1],"annotations":{"podnet.io/approved":` + strconv.Quote(approval) + `}}}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Items[0].podInfo(); err == nil {
		t.Error("a pod whose labels are not a map decoded")
	}
}

// TestMACIndexCountsDuplicates: a MAC two interfaces of one network hold
// is one duplicate, however many hold it, until only one does; the same
// MAC on two networks is none.
func TestMACIndexCountsDuplicates(t *testing.T) {
	pod := func(network string, mac byte) *PodInfo {
		return &PodInfo{Interfaces: []Attachment{{Interface: "net1", Network: network, MAC: [6]byte{2, 0, 0, 0, 0, mac}}, {Interface: "net2", Network: network}}}
	}
	x := newMACIndex()
	a, b, c, other := pod("data", 1), pod("data", 1), pod("data", 1), pod("up", 1)
	for _, p := range []*PodInfo{a, b, other} {
		x.apply(p, 1)
	}
	if got := x.Colliding(); !reflect.DeepEqual(got, map[string]int{"data": 1}) {
		t.Fatalf("two holders on data, one on up: %v", got)
	}
	x.apply(c, 1)
	x.handler().DeleteFunc(toolscache.DeletedFinalStateUnknown{Key: "t1/a", Obj: a})
	if got := x.Colliding(); !reflect.DeepEqual(got, map[string]int{"data": 1}) {
		t.Fatalf("three holders, one gone: %v", got)
	}
	x.handler().UpdateFunc(b, pod("data", 2))
	if got := x.Colliding(); len(got) != 0 {
		t.Fatalf("one holder each: %v", got)
	}
}
