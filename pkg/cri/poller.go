package cri

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Poller tells pods that wait for a sandbox when theirs is READY. Per
// Interval, while pods wait, it asks the runtime for the READY sandboxes
// of each waiting pod by its UID label when at most FewWaiting wait, and
// with one node-wide ListPodSandbox when more do; nothing while none does.
// So the runtime's work per interval is bounded whatever the number of
// waiting pods: a poll per pod would grow with a burst and queue the pods
// behind each other's polls. The per-pod lists for the common case of a
// pod or two keep each answer small; a node-wide list on a full node
// carries every sandbox with its labels and annotations, of which only the
// waiting pods' are decoded (onlySandboxesOf).
//
// The CRI's GetContainerEvents stream would spare even that poll, but
// containerd 1.6 (these machines' runtime) does not offer it, and a runtime
// that does (containerd 1.7 with evented PLEG) still needs this fallback.
//
// Poller is safe for concurrent use; Start runs the loop until ctx ends.
type Poller struct {
	Runtime Runtime
	// Interval bounds how often the runtime is asked: at most once per
	// Interval, and only while a pod waits.
	Interval time.Duration
	// Appeared is called, from the loop, with the UID of each waiting pod
	// whose READY sandbox the runtime lists; that pod waits no more.
	Appeared func(uid string)
	// Failed, when set, is told of each failed list; the loop goes on.
	Failed func(error)

	mu      sync.Mutex
	waiting map[string]struct{}
	wake    chan struct{}
	polls   atomic.Int64
}

// Wait adds a pod to those waiting for a sandbox. Call it after a lookup
// found none: the next poll sees a sandbox that appeared in between.
func (p *Poller) Wait(uid string) {
	p.mu.Lock()
	if p.waiting == nil {
		p.waiting = map[string]struct{}{}
	}
	p.waiting[uid] = struct{}{}
	wake := p.wakeChan()
	p.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// FewWaiting is the largest number of waiting pods that are looked up one
// by one.
const FewWaiting = 2

// Forget removes a pod that no longer waits (it found its sandbox by
// itself, or it went away).
func (p *Poller) Forget(uid string) {
	p.mu.Lock()
	delete(p.waiting, uid)
	p.mu.Unlock()
}

// Waiting is the number of pods waiting.
func (p *Poller) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}

// Polls is the number of ListPodSandbox calls made so far.
func (p *Poller) Polls() int64 { return p.polls.Load() }

func (p *Poller) wakeChan() chan struct{} {
	if p.wake == nil {
		p.wake = make(chan struct{}, 1)
	}
	return p.wake
}

// Start implements manager.Runnable: it polls while pods wait, at most
// once per Interval, until ctx ends.
func (p *Poller) Start(ctx context.Context) error {
	if p.Interval <= 0 {
		return fmt.Errorf("sandbox poller: interval %s must be positive", p.Interval)
	}
	p.mu.Lock()
	wake := p.wakeChan()
	p.mu.Unlock()
	for {
		if p.Waiting() == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-wake:
			}
		}
		p.poll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(p.Interval):
		}
	}
}

// poll lists the READY sandboxes once (node-wide, or per pod when few
// wait) and tells the waiting pods among them.
func (p *Poller) poll(ctx context.Context) {
	p.mu.Lock()
	var few []string
	var waiting map[string]struct{}
	if len(p.waiting) <= FewWaiting {
		for uid := range p.waiting {
			few = append(few, uid)
		}
	} else {
		waiting = maps.Clone(p.waiting)
	}
	p.mu.Unlock()
	var items []*runtimeapi.PodSandbox
	var err error
	if few == nil {
		// Of the node's sandboxes only those of pods that wait now are
		// decoded; one that waits from now on is seen by the next poll.
		items, err = p.list(ctx, nil, onlySandboxesOf(func(uid []byte) bool {
			_, ok := waiting[string(uid)]
			return ok
		}))
	}
	for _, uid := range few {
		got, lerr := p.list(ctx, map[string]string{PodUIDLabel: uid})
		items, err = append(items, got...), errors.Join(err, lerr)
	}
	if err != nil && p.Failed != nil && ctx.Err() == nil {
		p.Failed(err)
	}
	p.mu.Lock()
	found := readyWaiting(items, p.waiting)
	for _, uid := range found {
		delete(p.waiting, uid)
	}
	p.mu.Unlock()
	for _, uid := range found {
		p.Appeared(uid)
	}
}

// list asks the runtime for READY sandboxes with the given labels.
func (p *Poller) list(ctx context.Context, labels map[string]string, opts ...grpcCallOption) ([]*runtimeapi.PodSandbox, error) {
	p.polls.Add(1)
	list, err := p.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{
			State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
			LabelSelector: labels,
		},
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("list ready sandboxes %v: %w", labels, err)
	}
	return list.GetItems(), nil
}

// readyWaiting returns the UIDs of the waiting pods that one of the
// sandboxes belongs to and is READY, each once.
func readyWaiting(items []*runtimeapi.PodSandbox, waiting map[string]struct{}) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range items {
		uid := s.GetLabels()[PodUIDLabel]
		if _, ok := waiting[uid]; !ok || seen[uid] || s.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		seen[uid] = true
		out = append(out, uid)
	}
	return out
}
