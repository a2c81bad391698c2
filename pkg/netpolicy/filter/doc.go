// Package filter is what a pod link's network-policy filter holds: per
// direction, isolated or not, and the allowed peer prefixes, protocols
// and port ranges. netpolicy compiles verdicts into it and portsecurity
// writes it into the pod's netns; it stands apart from both so that the
// dataplane never links the API's types and the kubectl plugin never
// links nftables.
package filter
