package netpolicies

import (
	"cmp"
	"maps"
	"slices"
	"sync"

	"podnet.io/podnet/controller/infocache"
)

// podKey names a pod as namespace/name: a network's pods are told apart
// by it, as Evaluate tells them apart.
type podKey struct{ namespace, name string }

func keyOf(p *infocache.PodInfo) podKey { return podKey{p.Namespace, p.Name} }

// dirty is what the next pass recomputes: networks, and nodes whose
// object must be checked against their verdicts; all, on a leader's
// first pass, is every network and node.
type dirty struct {
	all      bool
	networks map[string]bool
	nodes    map[string]bool
}

func (d dirty) empty() bool { return !d.all && len(d.networks) == 0 && len(d.nodes) == 0 }

// merge adds o's marks to d.
func (d *dirty) merge(o dirty) {
	d.all = d.all || o.all
	d.networks = union(d.networks, o.networks)
	d.nodes = union(d.nodes, o.nodes)
}

func union(a, b map[string]bool) map[string]bool {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		a = make(map[string]bool, len(b))
	}
	maps.Copy(a, b)
	return a
}

// index is the pods of each podnet network and what is dirty. The pod
// cache's change handler keeps it, on every replica from the initial
// list on; the watches of policies, profiles, namespaces and NodePolicies
// mark what they change; a pass takes the marks.
type index struct {
	mu sync.Mutex
	// pods are each network's pods, by network name.
	pods map[string]map[podKey]*infocache.PodInfo
	// inNamespace counts, per namespace, its pods on each network: what
	// a change of the namespace's labels makes dirty.
	inNamespace map[string]map[string]int
	marks       dirty
}

// newIndex is an empty index whose first pass recomputes everything.
func newIndex() *index {
	return &index{pods: map[string]map[podKey]*infocache.PodInfo{}, inNamespace: map[string]map[string]int{}, marks: dirty{all: true}}
}

// podChanged follows one pod the cache took in (was nil), changed or
// dropped (now nil), and marks its networks, before and after, dirty when
// anything a verdict depends on changed. It says whether it marked any.
func (x *index) podChanged(was, now *infocache.PodInfo) bool {
	if samePolicyInputs(was, now) {
		if now != nil {
			// The same inputs: keep the newer record all the same, so
			// that the index holds what the cache does.
			x.mu.Lock()
			x.put(now)
			x.mu.Unlock()
		}
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	nets := networksOf(was)
	if was != nil {
		x.remove(was)
	}
	if now != nil {
		x.put(now)
		nets = append(nets, networksOf(now)...)
	}
	x.markNetworks(nets...)
	return len(nets) > 0
}

// put files p under each of its networks; x.mu is held.
func (x *index) put(p *infocache.PodInfo) {
	k := keyOf(p)
	for _, n := range networksOf(p) {
		pods := x.pods[n]
		if pods == nil {
			pods = map[podKey]*infocache.PodInfo{}
			x.pods[n] = pods
		}
		if _, ok := pods[k]; !ok {
			x.count(p.Namespace, n, 1)
		}
		pods[k] = p
	}
}

// remove takes p out of each of its networks; x.mu is held.
func (x *index) remove(p *infocache.PodInfo) {
	k := keyOf(p)
	for _, n := range networksOf(p) {
		if _, ok := x.pods[n][k]; !ok {
			continue
		}
		delete(x.pods[n], k)
		if len(x.pods[n]) == 0 {
			delete(x.pods, n)
		}
		x.count(p.Namespace, n, -1)
	}
}

func (x *index) count(namespace, network string, delta int) {
	nets := x.inNamespace[namespace]
	if nets == nil {
		nets = map[string]int{}
		x.inNamespace[namespace] = nets
	}
	if nets[network] += delta; nets[network] <= 0 {
		delete(nets, network)
		if len(nets) == 0 {
			delete(x.inNamespace, namespace)
		}
	}
}

// markNetworks marks networks dirty.
func (x *index) markNetworks(names ...string) {
	if len(names) == 0 {
		return
	}
	if x.marks.networks == nil {
		x.marks.networks = map[string]bool{}
	}
	for _, n := range names {
		x.marks.networks[n] = true
	}
}

// mark marks networks dirty (a policy's or a profile's).
func (x *index) mark(names ...string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.markNetworks(names...)
}

// markNamespace marks dirty the networks with pods in namespace (its
// labels changed) and says whether there were any.
func (x *index) markNamespace(namespace string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	nets := slices.Collect(maps.Keys(x.inNamespace[namespace]))
	x.markNetworks(nets...)
	return len(nets) > 0
}

// markNode marks a node's object to be checked against its verdicts.
func (x *index) markNode(node string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.marks.nodes == nil {
		x.marks.nodes = map[string]bool{}
	}
	x.marks.nodes[node] = true
}

// restore gives back the marks of a pass that failed, to be taken again.
func (x *index) restore(d dirty) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.marks.merge(d)
}

// take returns the marks and clears them: what changed since the last
// pass took them. A full pass (all) names every network with pods.
func (x *index) take() dirty {
	x.mu.Lock()
	defer x.mu.Unlock()
	d := x.marks
	x.marks = dirty{}
	if d.all {
		for n := range x.pods {
			d.networks = union(d.networks, map[string]bool{n: true})
		}
	}
	return d
}

// podsOf returns the pods of a network, sorted by namespace and name.
func (x *index) podsOf(network string) []*infocache.PodInfo {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := slices.Collect(maps.Values(x.pods[network]))
	slices.SortFunc(out, func(a, b *infocache.PodInfo) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// networksOf is the distinct networks of a pod's approved interfaces.
func networksOf(p *infocache.PodInfo) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, a := range p.Interfaces {
		if !slices.Contains(out, a.Network) {
			out = append(out, a.Network)
		}
	}
	return out
}

// samePolicyInputs says whether two versions of a pod (nil: none) give
// every verdict the same: the same identity, node, labels and interfaces
// (names, networks, profiles and addresses). Most updates of a pod
// (status, conditions) change none of them.
func samePolicyInputs(was, now *infocache.PodInfo) bool {
	if was == nil || now == nil {
		return was == nil && now == nil
	}
	return was.Namespace == now.Namespace && was.Name == now.Name && was.UID == now.UID &&
		was.Node == now.Node && was.Labels == now.Labels &&
		slices.EqualFunc(was.Interfaces, now.Interfaces, func(a, b infocache.Attachment) bool {
			return a.Interface == b.Interface && a.Network == b.Network && a.Profile == b.Profile && slices.Equal(a.Addresses, b.Addresses)
		})
}
