package v1alpha1

// DefaultServiceAccount is the service account of a pod whose
// spec.serviceAccountName is empty; an Approval always names one.
const DefaultServiceAccount = "default"
