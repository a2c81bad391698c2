package nsmeta

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Object is an empty metadata-only Namespace, the key of the cache's
// settings and the object to read a namespace into.
func Object() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
}

// Trim is a cache transform that keeps of a namespace what podnet reads:
// its name and labels (and what the cache itself needs).
func Trim(obj any) (any, error) {
	ns, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		// Deletion tombstones pass through unchanged.
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: ns.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:            ns.Name,
			UID:             ns.UID,
			ResourceVersion: ns.ResourceVersion,
			Labels:          ns.Labels,
		},
	}, nil
}
