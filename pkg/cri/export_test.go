package cri

// StoredSandbox lets the root tests (package cri_test) ask containerd's
// sandbox store alone, to show which runtime answers there.
var StoredSandbox = containerdStoredSandbox
