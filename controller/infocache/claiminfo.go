package infocache

import (
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/ipam"
)

// ClaimInfo is all the controller keeps of an IPClaim: what the collector
// judges it by (its spec, and the node and namespace labels forgery
// compares with the pod), what its delete carries (UID, and
// resourceVersion for a reserved claim) and what finds it again (the
// StatefulSet label). The claim cache holds one per claim instead of the
// IPClaim controller-runtime decodes (about 1 KB with its labels map and
// ObjectMeta); the strings claims share (networks, address spaces,
// pools, interfaces, namespaces, nodes) are interned.
type ClaimInfo struct {
	Name            string
	UID             types.UID
	ResourceVersion string
	// Node is the v1alpha1.NodeLabel ("" when none).
	Node string
	// Namespace is the v1alpha1.NamespaceLabel ("" when none).
	Namespace string
	// StatefulSetUID is the v1alpha1.StatefulSetLabel ("" when none).
	StatefulSetUID string
	Spec           v1alpha1.IPClaimSpec
	// HasNode and HasNamespace say whether the claim has those labels
	// (after the strings, so that a ClaimInfo fits 256 bytes).
	HasNode, HasNamespace bool
	// Misnamed says whether the name is not one the spec makes
	// (misnamed): a claim never changes its name or what it holds, so
	// this is read once, not on every sweep (each check builds names).
	Misnamed bool
}

// NewClaimInfo reduces c to what the controller keeps.
func NewClaimInfo(c *v1alpha1.IPClaim) *ClaimInfo {
	return claimInfoOf(c.Name, c.UID, c.ResourceVersion, c.Labels, c.Spec)
}

// claimInfoOf is newClaimInfo from the fields themselves, for the list
// decoder, which never builds an IPClaim.
func claimInfoOf(name string, uid types.UID, rv string, labels map[string]string, spec v1alpha1.IPClaimSpec) *ClaimInfo {
	c := &ClaimInfo{Name: name, UID: uid, ResourceVersion: rv, Spec: spec}
	c.Node, c.HasNode = labels[v1alpha1.NodeLabel]
	c.Namespace, c.HasNamespace = labels[v1alpha1.NamespaceLabel]
	c.Node, c.Namespace = intern(c.Node), intern(c.Namespace)
	c.StatefulSetUID = intern(labels[v1alpha1.StatefulSetLabel])
	s := &c.Spec
	s.Network, s.Pool, s.AddressSpace, s.Interface = intern(s.Network), intern(s.Pool), intern(s.AddressSpace), intern(s.Interface)
	s.Pod.Namespace = intern(s.Pod.Namespace)
	c.Misnamed = Misnamed(c) != ""
	return c
}

// Object is the IPClaim a delete or an Event names: its name, UID and
// resourceVersion, nothing else.
func (c *ClaimInfo) Object() *v1alpha1.IPClaim {
	return &v1alpha1.IPClaim{ObjectMeta: metav1.ObjectMeta{Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion}}
}

// GetObjectMeta makes a ClaimInfo an object to client-go's key functions
// (claims are cluster-scoped: the key is the name) and reflector; it is
// built on demand, never stored.
func (c *ClaimInfo) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Name: c.Name, UID: c.UID, ResourceVersion: c.ResourceVersion}
}

// GetObjectKind implements runtime.Object.
func (c *ClaimInfo) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. A ClaimInfo is never changed
// once made, so the copy shares its pointers (slot, hold).
func (c *ClaimInfo) DeepCopyObject() runtime.Object {
	cp := *c
	return &cp
}

// toClaimInfo is the claim informer's transform: a claim arriving by
// watch (or by a streamed initial list) is reduced as it arrives; what is
// already a ClaimInfo (from the paged list) or a tombstone passes
// unchanged.
func toClaimInfo(obj any) (any, error) {
	if c, ok := obj.(*v1alpha1.IPClaim); ok {
		return NewClaimInfo(c), nil
	}
	return obj, nil
}

// Misnamed says why c's name is not a name its spec makes (ipam's
// ClaimName, SlotName, or the names earlier versions gave): the name is
// what reserves an address or counts against a namespace's quota, so a
// claim must hold what its name says, for its own pod's namespace.
func Misnamed(c *ClaimInfo) string {
	if c.Spec.Slot != nil {
		pool, err := netip.ParsePrefix(c.Spec.Pool)
		if err != nil {
			return fmt.Sprintf("its pool %q is not a CIDR", c.Spec.Pool)
		}
		ns, k := c.Spec.Pod.Namespace, int(*c.Spec.Slot)
		if c.Name != ipam.SlotName(c.Spec.AddressSpace, pool, ns, k) && c.Name != ipam.FormerSlotName(pool, ns, k) {
			return fmt.Sprintf("it is a quota slot of pod namespace %q but its name %q is not one of that namespace's slots", ns, c.Name)
		}
		return ""
	}
	addr, err := netip.ParseAddr(c.Spec.Address)
	if err != nil {
		return fmt.Sprintf("its address %q is not an IP address", c.Spec.Address)
	}
	if c.Name != ipam.ClaimName(c.Spec.AddressSpace, addr) && c.Name != ipam.FormerClaimName(addr) && c.Name != ipam.LegacyClaimName(c.Spec.Network, addr) {
		return fmt.Sprintf("its name %q is not the name of its address %s", c.Name, addr)
	}
	return ""
}
