package webhook

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

// Under --hold-pods=auto the webhook holds each new pod as podnet-controller
// chose for the cluster (hold.ChooseAuto over the Nodes' reports):
// it reads the choice from one ConfigMap's annotations, cached as
// metadata, and never watches Nodes. The choice read at admission is the
// pod's for good: a pod admitted with NRI on a node that later loses its
// validator is held by NRI alone, which the agent reports as
// HoldNotEnforced; every new pod after the flip gets the wait container.
//
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch,namespace=podnet-system

// holdChoiceObject is the choice's ConfigMap as the webhook caches it.
func holdChoiceObject() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
}

// holdChoiceCache caches that one ConfigMap of podnet's namespace, and
// of it only name and annotations.
func holdChoiceCache(namespace string) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", v1alpha1.HoldChoiceConfigMap),
		Transform: func(obj any) (any, error) {
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return obj, nil
			}
			return &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
				Namespace: m.Namespace, Name: m.Name, ResourceVersion: m.ResourceVersion, Annotations: m.Annotations}}, nil
		},
	}
}

// cachedHoldChoice reads the controller's choice from r (the cache): the
// wait init container while the ConfigMap is missing or unreadable.
func cachedHoldChoice(r client.Reader, namespace string) func() v1alpha1.HoldMode {
	return func() v1alpha1.HoldMode {
		obj := holdChoiceObject()
		key := client.ObjectKey{Namespace: namespace, Name: v1alpha1.HoldChoiceConfigMap}
		if err := r.Get(context.Background(), key, obj); err != nil {
			return hold.AutoOf("")
		}
		return hold.AutoOf(obj.GetAnnotations()[v1alpha1.HoldChoiceAnnotation])
	}
}
