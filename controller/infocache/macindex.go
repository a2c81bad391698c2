package infocache

import (
	"maps"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
)

// macIndex counts, per network, the interfaces of the cached pods that
// hold each MAC (Attachment.MAC), so that a MAC held twice on one network
// is known at once: podnet's MAC pool and static MACs are unique by
// construction (pkg/macpool), but the MACs the kernel picks for veths
// and macvlans, and those of host NICs, are not. It keeps the count of
// colliding MACs per network up to date on every add, update and delete,
// so a scrape reads a small map and never walks the pods.
type macIndex struct {
	mu      sync.Mutex
	holders map[macKey]int32
	// colliding counts, per network, the MACs with more than one holder.
	colliding map[string]int
}

type macKey struct {
	network string
	mac     [6]byte
}

func newMACIndex() *macIndex {
	return &macIndex{holders: map[macKey]int32{}, colliding: map[string]int{}}
}

// apply adds (delta 1) or removes (delta -1) a pod's MACs.
func (x *macIndex) apply(p *PodInfo, delta int32) {
	if p == nil {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, a := range p.Interfaces {
		if a.MAC == ([6]byte{}) {
			continue
		}
		k := macKey{a.Network, a.MAC}
		before := x.holders[k]
		after := before + delta
		if after <= 0 {
			delete(x.holders, k)
		} else {
			x.holders[k] = after
		}
		switch {
		case before <= 1 && after > 1:
			x.colliding[a.Network]++
		case before > 1 && after <= 1:
			if x.colliding[a.Network]--; x.colliding[a.Network] <= 0 {
				delete(x.colliding, a.Network)
			}
		}
	}
}

// Colliding returns, per network that has any, how many of its MACs more
// than one interface holds.
func (x *macIndex) Colliding() map[string]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return maps.Clone(x.colliding)
}

// handler keeps the index in step with the pod informer.
func (x *macIndex) handler() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p, _ := recordOf[PodInfo](obj)
			x.apply(p, 1)
		},
		UpdateFunc: func(old, obj any) {
			was, _ := recordOf[PodInfo](old)
			p, _ := recordOf[PodInfo](obj)
			x.apply(was, -1)
			x.apply(p, 1)
		},
		DeleteFunc: func(obj any) {
			p, _ := recordOf[PodInfo](obj)
			x.apply(p, -1)
		},
	}
}
