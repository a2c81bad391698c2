package infocache

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	"podnet.io/podnet/api/v1alpha1"
)

// fullClaim is a claim as the API server lists it: labels and metadata
// the controller does not read included.
func fullClaim(name, podUID string, held bool) *v1alpha1.IPClaim {
	// Each claim its own copy of the strings claims share, as decoded
	// claims have.
	node, network, space := strings.Clone("node-a"), strings.Clone("data"), strings.Clone("pnbr-data.bridge")
	c := &v1alpha1.IPClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "IPClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "17",
			CreationTimestamp: metav1.Now(), Annotations: map[string]string{"other": "x"},
			Labels: map[string]string{v1alpha1.NodeLabel: node, v1alpha1.NamespaceLabel: "t1",
				v1alpha1.NetworkLabel: "data", v1alpha1.PodUIDLabel: podUID, "other": "y"}},
		Spec: v1alpha1.IPClaimSpec{Network: network, AddressSpace: space, Address: "10.0.0.7", Pool: "10.0.0.0/24",
			Interface: "net1", Pod: v1alpha1.PodReference{Namespace: "t1", Name: "p-" + name, UID: podUID}},
	}
	if held {
		c.Labels[v1alpha1.StatefulSetLabel] = "sts-uid"
		c.Spec.StatefulSet = &v1alpha1.StatefulSetReservation{Name: "db", UID: "sts-uid"}
	}
	return c
}

// TestClaimInfoKeepsWhatCollectionNeeds: a ClaimInfo is the claim's
// name, UID, resourceVersion, the labels the collector reads (present or
// not) and its spec, the names claims share interned; nothing else.
func TestClaimInfoKeepsWhatCollectionNeeds(t *testing.T) {
	c := fullClaim("a", "pod-a", true)
	got := NewClaimInfo(c)
	want := &ClaimInfo{Name: "a", UID: "uid-a", ResourceVersion: "17", Node: "node-a", HasNode: true,
		Namespace: "t1", HasNamespace: true, StatefulSetUID: "sts-uid", Spec: c.Spec, Misnamed: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ClaimInfo %+v, want %+v", got, want)
	}
	if n := reflect.TypeFor[ClaimInfo]().NumField(); n != 10 || unsafe.Sizeof(ClaimInfo{}) > 256 {
		t.Errorf("ClaimInfo has %d fields of %d bytes, want 10 of at most 256 (a size class)", n, unsafe.Sizeof(ClaimInfo{}))
	}
	unlabelled := fullClaim("b", "pod-b", false)
	unlabelled.Labels = nil
	if b := NewClaimInfo(unlabelled); b.HasNode || b.HasNamespace || b.StatefulSetUID != "" {
		t.Errorf("a claim without labels reads as %+v", b)
	}
	other := NewClaimInfo(fullClaim("c", "pod-c", false))
	if unsafe.StringData(other.Spec.Network) != unsafe.StringData(got.Spec.Network) || unsafe.StringData(other.Node) != unsafe.StringData(got.Node) ||
		unsafe.StringData(other.Spec.AddressSpace) != unsafe.StringData(got.Spec.AddressSpace) {
		t.Error("network, address space and node names of two claims are not shared")
	}
	if o := got.Object(); o.Name != "a" || o.UID != "uid-a" || o.ResourceVersion != "17" {
		t.Errorf("object %+v", o.ObjectMeta)
	}

	// The informer's transform reduces claims, and leaves ClaimInfos and
	// tombstones as they are.
	if out, _ := toClaimInfo(c); !reflect.DeepEqual(out, want) {
		t.Errorf("transform gave %+v", out)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "a", Obj: want}
	if out, _ := toClaimInfo(tomb); !reflect.DeepEqual(out, tomb) {
		t.Errorf("transform changed a tombstone: %+v", out)
	}
}

// TestDecodeClaimPage: a JSON page of IPClaims decodes into the
// ClaimInfos the claims themselves reduce to, with the page's metadata.
func TestDecodeClaimPage(t *testing.T) {
	claims := []*v1alpha1.IPClaim{fullClaim("a", "pod-a", true), fullClaim("b", "pod-b", false), fullClaim("c", "pod-c", false)}
	k := int32(2)
	claims[2].Labels = nil
	claims[2].Spec.Address, claims[2].Spec.Slot = "", &k
	list := v1alpha1.IPClaimList{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "IPClaimList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}}
	for _, c := range claims {
		list.Items = append(list.Items, *c)
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	page, err := decodeClaimPage(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if page.Metadata.ResourceVersion != "42" || page.Metadata.Continue != "next" || len(page.Items) != len(claims) {
		t.Fatalf("page metadata %+v, %d items", page.Metadata, len(page.Items))
	}
	for i, c := range claims {
		if got, want := page.Items[i].claimInfo(), NewClaimInfo(c); !reflect.DeepEqual(got, want) {
			t.Errorf("claim %s decoded as %+v, want %+v", c.Name, got, want)
		}
	}
	if _, err := decodeClaimPage(bytes.NewReader([]byte(`{"items":[{"metadata":{"uid":7}}]}`))); err == nil {
		t.Error("a page of the wrong shape decoded")
	}
}
