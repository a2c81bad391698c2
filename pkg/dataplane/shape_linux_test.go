package dataplane

import "testing"

// TestShapeIsWhatTheKindBuilds holds each kind's Shape against its netlink
// entry: the pod link the shape names is the one podLink builds, and a
// kind said to share a subinterface is one whose node links join its
// bridge.
func TestShapeIsWhatTheKindBuilds(t *testing.T) {
	for _, k := range Kinds() {
		s, ok := ShapeOf(k)
		if !ok {
			t.Fatalf("kind %q has no shape", k)
		}
		lk, ok := linuxKinds[k]
		if !ok {
			t.Fatalf("kind %q has no netlink entry", k)
		}
		built := lk.linkType
		if lk.take != nil {
			// It builds nothing: the pod link is a NIC of the node.
			built = "node's nics"
		}
		if s.PodLink != built {
			t.Errorf("kind %q: shape says the pod link is %q, the netlink entry builds %q", k, s.PodLink, built)
		}
		if s.NodeBridge != lk.hasPeer {
			t.Errorf("kind %q: shape says node bridge %v, the netlink entry's pod link has a node peer: %v", k, s.NodeBridge, lk.hasPeer)
		}
		if s.SharedSubinterface && lk.join == nil {
			t.Errorf("kind %q: shape says pods share a subinterface, but no node link joins its bridge", k)
		}
	}
	if _, ok := ShapeOf("tunnel"); ok {
		t.Error("an unknown kind has a shape")
	}
}
