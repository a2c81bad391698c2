package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is podnet.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

	// SchemeBuilder registers podnet's types with a runtime.Scheme. It is
	// apimachinery's own builder, so this package needs nothing else.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds podnet's types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&NetworkProfile{}, &NetworkProfileList{},
		&IPClaim{}, &IPClaimList{},
		&MACClaim{}, &MACClaimList{},
		&NodePolicy{}, &NodePolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
