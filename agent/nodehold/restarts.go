package nodehold

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cristop"
)

// SandboxContainers lists a sandbox's running containers and stops one
// (cristop.Client).
type SandboxContainers interface {
	Running(ctx context.Context, sandbox, podUID string) ([]cristop.Container, error)
	Stop(ctx context.Context, id string, grace time.Duration) error
}

var _ SandboxContainers = cristop.Client{}

// unheldMemory is how long the decision about a sandbox is remembered.
// It keeps a later reconcile that reads the pod before its status write
// reached the cache from deciding again (it would find the restarted
// container started before its own attach); once forgotten, the pod's
// status says the networks are attached and nothing is decided again.
const unheldMemory = 10 * time.Minute

// UnheldRestarts stops the containers of NRI-held pods that started
// before their networks (unheld.go): at most one decision per sandbox in
// this process, and each container stopped at most once, so a pod cannot
// make the agent restart its containers in a loop, and the containers
// stopped are only those the runtime lists in the pod's own sandbox with
// the pod's UID. A nil *UnheldRestarts does nothing.
type UnheldRestarts struct {
	Containers SandboxContainers
	restarted  prometheus.Counter

	mu        sync.Mutex
	sandboxes map[string]*unheldSandbox
}

// unheldSandbox is one sandbox's first attach: the pod's state before it,
// and what is still to be stopped once decided.
type unheldSandbox struct {
	seen  time.Time
	since time.Time
	// built: an attach built an interface, so the state noted stands.
	built   bool
	decided bool
	pending []unheldVerdict
}

// NewUnheldRestarts returns an UnheldRestarts and registers
// podnet_agent_containers_restarted_total with reg.
func NewUnheldRestarts(reg prometheus.Registerer, c SandboxContainers) (*UnheldRestarts, error) {
	u := &UnheldRestarts{Containers: c, restarted: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podnet_agent_containers_restarted_total",
		Help: "Containers of NRI-held pods the agent stopped because the runtime started them before their networks, so that the kubelet starts them again with them.",
	})}
	if err := reg.Register(u.restarted); err != nil {
		return nil, fmt.Errorf("register podnet_agent_containers_restarted_total: %w", err)
	}
	return u, nil
}

// Before notes, just before an attach may create the first link in the
// sandbox, the pod's state when it is a candidate. The note stands once
// an attach built an interface (After): until then each attach notes
// afresh, since one that built nothing (every interface not granted yet,
// or failing) created no link.
func (u *UnheldRestarts) Before(pod *corev1.Pod, sandbox string) {
	if u == nil {
		return
	}
	now := time.Now()
	since, ok := unheldCandidate(pod)
	u.mu.Lock()
	defer u.mu.Unlock()
	if s := u.sandboxes[sandbox]; s != nil {
		if !s.built && ok {
			s.seen, s.since = now, since
		}
		return
	}
	if !ok {
		return
	}
	if u.sandboxes == nil {
		u.sandboxes = map[string]*unheldSandbox{}
	}
	for id, s := range u.sandboxes {
		if now.Sub(s.seen) > unheldMemory {
			delete(u.sandboxes, id)
		}
	}
	u.sandboxes[sandbox] = &unheldSandbox{seen: now, since: since}
}

// After notes whether the attach built any interface and, once the pod's
// networks are all attached in the sandbox, decides (the first time) and
// stops what is still to be stopped, with an Event on the pod for each
// container. attachedAt is when the attach had built the networks, taken
// before it answered the plugin. A failed stop is tried again at the next
// attach.
func (u *UnheldRestarts) After(ctx context.Context, events podstate.EventRecorder, pod *corev1.Pod, sandbox string, built, ready bool, attachedAt time.Time) error {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	if s := u.sandboxes[sandbox]; s != nil && built {
		s.built = true
	}
	u.mu.Unlock()
	if !ready {
		return nil
	}
	todo, err := u.decide(ctx, pod, sandbox, attachedAt)
	if err != nil || len(todo) == 0 {
		return err
	}
	var left []unheldVerdict
	var errs []error
	for _, v := range todo {
		if err := u.carryOut(ctx, events, pod, v); err != nil {
			left = append(left, v)
			errs = append(errs, err)
		}
	}
	u.mu.Lock()
	if s := u.sandboxes[sandbox]; s != nil {
		s.pending = left
	}
	u.mu.Unlock()
	return errors.Join(errs...)
}

// decide returns what is still to be done in the sandbox: on the first
// call the decision over the sandbox's running containers.
func (u *UnheldRestarts) decide(ctx context.Context, pod *corev1.Pod, sandbox string, attachedAt time.Time) ([]unheldVerdict, error) {
	u.mu.Lock()
	s := u.sandboxes[sandbox]
	if s == nil || s.decided {
		var todo []unheldVerdict
		if s != nil {
			todo = s.pending
		}
		u.mu.Unlock()
		return todo, nil
	}
	in := unheldInput{pod: pod, attachedAt: attachedAt, since: s.since}
	u.mu.Unlock()
	var err error
	if in.containers, err = u.Containers.Running(ctx, sandbox, string(pod.UID)); err != nil {
		return nil, fmt.Errorf("pod %s/%s: containers started before their networks: %w", pod.Namespace, pod.Name, err)
	}
	todo := unheldRestarts(in)
	u.mu.Lock()
	s.decided, s.pending = true, todo
	u.mu.Unlock()
	return todo, nil
}

// carryOut stops one container (or only reports it) and says so on the
// pod.
func (u *UnheldRestarts) carryOut(ctx context.Context, events podstate.EventRecorder, pod *corev1.Pod, v unheldVerdict) error {
	log := logf.FromContext(ctx).WithValues("container", v.Container.Name, "containerID", v.Container.ID)
	if !v.Stop {
		log.Info("container started before its networks", "why", v.Why)
		events.Eventf(pod, nil, corev1.EventTypeWarning, v1alpha1.ReasonStartedWithoutNetworks, "Restart", "%s", v.Why)
		return nil
	}
	if err := u.Containers.Stop(ctx, v.Container.ID, v.Grace); err != nil {
		return fmt.Errorf("pod %s/%s container %q: %w", pod.Namespace, pod.Name, v.Container.Name, err)
	}
	u.restarted.Inc()
	log.Info("stopped a container started before its networks", "why", v.Why)
	events.Eventf(pod, nil, corev1.EventTypeWarning, v1alpha1.ReasonRestartedWithoutNetworks, "Restart", "%s", v.Why)
	return nil
}
