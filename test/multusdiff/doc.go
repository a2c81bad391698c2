// Package multusdiff holds the differential test between podnet's request
// parser and the Network Plumbing WG's own code: Multus' GetPodNetwork and
// the NetworkAttachmentDefinition client's ParseNetworkAnnotation, and the
// NAD client's GetNetworkStatus reading what the podnet agent writes.
//
// It is a module of its own so that podnet's go.mod never requires Multus
// or the NAD client: only this test does. It contains no product code.
package multusdiff
