// Package v1alpha1 holds podnet's API: the NetworkProfile and IPClaim custom
// resources, the Approval that the webhook signs and the agent executes, and
// every annotation, label and condition name that the parts share.
//
// It depends on apimachinery only, so that every other package may import it.
//
// +kubebuilder:object:generate=true
// +groupName=podnet.io
package v1alpha1
