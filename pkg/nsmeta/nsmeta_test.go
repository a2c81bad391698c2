package nsmeta

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestTrimKeepsNameAndLabels(t *testing.T) {
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "t1", UID: "u", ResourceVersion: "7", Labels: map[string]string{"podnet.io/enabled": "true"},
			Annotations: map[string]string{"big": "x"}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
	}
	out, err := Trim(in)
	if err != nil {
		t.Fatal(err)
	}
	want := &metav1.PartialObjectMetadata{TypeMeta: in.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "t1", UID: "u", ResourceVersion: "7", Labels: in.Labels}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("Trim = %+v", out)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "t1"}
	if got, _ := Trim(tomb); got != tomb {
		t.Fatalf("tombstone changed: %+v", got)
	}
}
