package nri

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/go-logr/logr"

	"podnet.io/podnet/cnisocket"
)

// DefaultCreateWait bounds how long CreateContainer awaits the attach:
// below NRI's 2 s plugin request timeout, after which the runtime drops
// the plugin and creates the container without it.
const DefaultCreateWait = 1500 * time.Millisecond

// MaxCreateWait is the longest --nri-create-wait: NRI's request timeout
// less a margin for the netns check and the reply.
const MaxCreateWait = 1900 * time.Millisecond

// Attacher starts a sandbox's attach (sandbox.Handshake.Start).
type Attacher interface {
	Start(ctx context.Context, req cnisocket.Request) (Attach, error)
}

// Attach is one started attach (agent.Ticket).
type Attach interface {
	// Interfaces are the names the verified approval lists.
	Interfaces() []string
	// NetNS is the netns the attach builds in (the runtime's record when
	// NRI named none).
	NetNS() string
	// Await returns the reconciler's next answer, or an error once ctx
	// ended.
	Await(ctx context.Context) error
	// Again enqueues the pod for a fresh attach.
	Again()
	// Close ends the attach's bookkeeping.
	Close()
}

// Plugin is the agent's NRI plugin. Its methods are NRI's hooks
// (pkg/stub); Start runs it.
type Plugin struct {
	Attacher Attacher
	// Socket is the runtime's NRI socket.
	Socket string
	// CreateWait bounds CreateContainer's wait; zero means
	// DefaultCreateWait.
	CreateWait time.Duration
	// Hook, when set, is the wait hook on the node (podnet-wait's path
	// there, podwait.RunHook): a container whose attach is still under way
	// when CreateWait ends is created with it as an OCI createRuntime hook,
	// which waits in the pod's netns for HookTimeout, instead of being
	// refused and retried by the kubelet after its backoff.
	Hook        string
	HookTimeout time.Duration
	Metrics     *Metrics
	// Claimed, when set, reports whether a pod (by UID) has a ResourceClaim
	// of podnet's DRA driver prepared on the node: such a pod is held like
	// one with an approval.
	Claimed func(uid string) bool
	Log     logr.Logger
	// OnConnect, when set, is called (in a goroutine of its own) each
	// time the plugin registers with the runtime.
	OnConnect func()
	// Release, when set, gives a stopping sandbox's host devices back to
	// the node (dataplane.ReleaseDevices), while its netns still exists.
	Release func(uid, netns string) error
	// links reads a netns's link names (linksIn; replaced in tests).
	links func(path string) (map[string]bool, error)

	connected atomic.Bool

	mu        sync.Mutex
	ctx       context.Context // Start's: the attaches outlive the hooks
	sandboxes map[string]*started
}

// started is the attach of one sandbox: ready closes once Start returned,
// with att or err.
type started struct {
	ready chan struct{}
	att   Attach
	err   error

	// attached: the reconciler answered success since the attach started;
	// it stays so for the sandbox's later containers until an interface is
	// found missing.
	mu       sync.Mutex
	attached bool
}

func (s *started) isAttached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached
}

func (s *started) setAttached(v bool) {
	s.mu.Lock()
	s.attached = v
	s.mu.Unlock()
}

// ValidateCreateWait refuses a --nri-create-wait NRI would cut short.
func ValidateCreateWait(d time.Duration) error {
	if d < 0 || d > MaxCreateWait {
		return fmt.Errorf("--nri-create-wait %s: must be between 0 and %s (NRI drops a plugin that takes its request timeout, 2s)", d, MaxCreateWait)
	}
	return nil
}

func (p *Plugin) createWait() time.Duration {
	if p.CreateWait <= 0 {
		return DefaultCreateWait
	}
	return p.CreateWait
}

// RunPodSandbox starts the attach of a podnet pod's sandbox and returns at
// once.
func (p *Plugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	defer p.Metrics.observe(hookRunPodSandbox, time.Now())
	if p.holds(pod) {
		p.start(pod)
	}
	return nil
}

// CreateContainer refuses a podnet pod's container until the reconciler
// has attached the sandbox's networks and every approved interface exists
// in the pod's netns, awaiting the attach for at most CreateWait.
func (p *Plugin) CreateContainer(ctx context.Context, pod *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	defer p.Metrics.observe(hookCreateContainer, time.Now())
	if !p.holds(pod) {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.createWait())
	defer cancel()
	err := p.admit(ctx, pod, ctr.GetName())
	var pending *pendingError
	if errors.As(err, &pending) {
		if p.Hook != "" {
			p.Metrics.hookedOne()
			return hookAdjustment(p.Hook, pending.att.Interfaces(), p.hookTimeout()), nil, nil
		}
		pending.att.Again()
	}
	if err != nil {
		p.Log.Info("container held", "pod", pod.GetNamespace()+"/"+pod.GetName(), "container", ctr.GetName(), "reason", err.Error())
		p.Metrics.refusedOne()
		return nil, nil, err
	}
	return nil, nil, nil
}

// DefaultHookTimeout is how long the wait hook waits by default: a
// container's creation is blocked meanwhile, well within the kubelet's
// runtime request timeout (2 min).
const DefaultHookTimeout = time.Minute

// MaxHookTimeout keeps the hook, with its kill margin, within the
// kubelet's 2 min runtime request timeout.
const MaxHookTimeout = 100 * time.Second

// ValidateHookTimeout refuses a --nri-hook-timeout the kubelet would cut
// short.
func ValidateHookTimeout(d time.Duration) error {
	if d < time.Second || d > MaxHookTimeout {
		return fmt.Errorf("--nri-hook-timeout %s: must be between 1s and %s (the hook blocks the kubelet's call, which gives up after 2m)", d, MaxHookTimeout)
	}
	return nil
}

func (p *Plugin) hookTimeout() time.Duration {
	if p.HookTimeout <= 0 {
		return DefaultHookTimeout
	}
	return p.HookTimeout
}

// holds says whether the plugin holds the pod's containers: the webhook
// chose NRI to hold it, and it carries an approval or the kubelet prepared
// a podnet ResourceClaim for it (which DRA does before the sandbox exists).
func (p *Plugin) holds(pod *api.PodSandbox) bool {
	return heldByNRI(pod) && (isPodnetPod(pod) || (p.Claimed != nil && p.Claimed(pod.GetUid())))
}

// admit is CreateContainer's decision: nil once the reconciler has
// answered success for the sandbox since its attach started and every
// approved interface is in the netns. Names alone never admit: a link of
// an approved name may be a half-built one the reconciler still repairs.
func (p *Plugin) admit(ctx context.Context, pod *api.PodSandbox, container string) error {
	s := p.start(pod)
	select {
	case <-s.ready:
	case <-ctx.Done():
		return refusal(pod, container, nil, fmt.Errorf("the attach has not started in time: %w", ctx.Err()))
	}
	if s.err != nil {
		// The next CreateContainer starts over: the pod may have reached
		// the cache meanwhile.
		p.forget(pod.GetId(), s)
		return refusal(pod, container, nil, s.err)
	}
	if !s.isAttached() {
		answer := s.att.Await(ctx)
		if answer != nil && ctx.Err() != nil {
			// No answer yet: the attach is under way. Refused, the
			// kubelet's retry finds its answer after the reconciler's
			// next try; hooked, the hook waits for the interfaces.
			missing, _ := p.missing(pod, s.att) // none named when unreadable
			return &pendingError{att: s.att, err: refusal(pod, container, missing, answer)}
		}
		if answer != nil {
			// The reconciler tries again; the kubelet's retry finds its answer.
			s.att.Again()
			missing, _ := p.missing(pod, s.att) // none named when unreadable
			return refusal(pod, container, missing, answer)
		}
		s.setAttached(true)
	}
	missing, err := p.missing(pod, s.att)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		// Lost since the answer: the next container waits for a fresh one.
		s.setAttached(false)
		s.att.Again()
		return refusal(pod, container, missing, nil)
	}
	return nil
}

// missing are the approved interfaces not in the pod's netns.
func (p *Plugin) missing(pod *api.PodSandbox, att Attach) ([]string, error) {
	links := p.links
	if links == nil {
		links = linksIn
	}
	present, err := links(att.NetNS())
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w: %w", pod.GetNamespace(), pod.GetName(), errNotReady, err)
	}
	return missingInterfaces(att.Interfaces(), present), nil
}

// start returns the sandbox's attach, starting it when there is none (the
// agent restarted, or the last start failed).
func (p *Plugin) start(pod *api.PodSandbox) *started {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.sandboxes[pod.GetId()]; ok {
		return s
	}
	if p.sandboxes == nil {
		p.sandboxes = map[string]*started{}
	}
	s := &started{ready: make(chan struct{})}
	p.sandboxes[pod.GetId()] = s
	ctx := p.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	req := request(pod)
	go func() {
		defer close(s.ready)
		s.att, s.err = p.Attacher.Start(ctx, req)
		if s.err != nil {
			p.Log.Info("attach not started", "pod", req.Namespace+"/"+req.Name, "sandbox", req.SandboxID, "reason", s.err.Error())
		}
	}()
	return s
}

// forget drops the sandbox's attach if it is still s.
func (p *Plugin) forget(id string, s *started) {
	p.mu.Lock()
	if p.sandboxes[id] != s {
		p.mu.Unlock()
		return
	}
	delete(p.sandboxes, id)
	p.mu.Unlock()
	go func() {
		<-s.ready
		if s.att != nil {
			s.att.Close()
		}
	}()
}

// StopPodSandbox ends the sandbox's attach bookkeeping and gives its host
// devices back: the runtime calls it before it removes the netns.
func (p *Plugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.forgetSandbox(pod.GetId())
	if path := netNSPath(pod); p.Release != nil && path != "" {
		if err := p.Release(pod.GetUid(), path); err != nil {
			// The node's sweep restores what could not go back now.
			p.Log.Error(err, "give host devices back", "pod", pod.GetNamespace()+"/"+pod.GetName())
		}
	}
	return nil
}

// RemovePodSandbox ends the sandbox's attach bookkeeping.
func (p *Plugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.forgetSandbox(pod.GetId())
	return nil
}

func (p *Plugin) forgetSandbox(id string) {
	p.mu.Lock()
	s := p.sandboxes[id]
	p.mu.Unlock()
	if s != nil {
		p.forget(id, s)
	}
}

// Synchronize, on every (re)connection, drops the attaches of sandboxes
// the runtime no longer has (stopped while the plugin was away).
func (p *Plugin) Synchronize(_ context.Context, pods []*api.PodSandbox, _ []*api.Container) ([]*api.ContainerUpdate, error) {
	live := make(map[string]bool, len(pods))
	for _, pod := range pods {
		live[pod.GetId()] = true
	}
	p.mu.Lock()
	var gone []string
	for id := range p.sandboxes {
		if !live[id] {
			gone = append(gone, id)
		}
	}
	p.mu.Unlock()
	for _, id := range gone {
		p.forgetSandbox(id)
	}
	return nil, nil
}
