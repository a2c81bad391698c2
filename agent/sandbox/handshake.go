package sandbox

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/cri"
)

// DefaultFindWait bounds how long a request from the CNI plugin waits for
// its pod to reach the agent's cache: the kubelet runs the sandbox of a
// pod it learned of from the same API server, so the informer is usually
// there first or within milliseconds.
const DefaultFindWait = 10 * time.Second

// findPoll is how often the cache is read again while a pod is not there.
const findPoll = 20 * time.Millisecond

// Handshake answers the chained CNI plugin (cniplugin), which
// holds a podnet pod's sandbox setup until its networks are attached. A
// request is checked against the node-local cache and the approval's
// signature, then recorded as a sandbox hint (the sandbox is neither READY
// nor listable through CRI while its own CNI ADD runs) and the pod is
// enqueued: the reconciler attaches as it always does, with the hint as
// its sandbox, and answers here (Answer). It implements
// cnisocket.Attacher.
type Handshake struct {
	// Reader is the node-local cache.
	Reader   client.Reader
	NodeName string
	Verifier podstate.Verifier
	// Claimed, when set, says whether a pod (by UID) has a resource claim
	// prepared on this node: such a pod is attached like a pod with an
	// approval, and Verifier merges its claims' approvals in
	// (dra.ClaimNetworks.PodVerifier).
	Claimed func(uid string) bool
	// Records is the runtime's record of sandboxes by id: a request's
	// netns must be the one it recorded for that sandbox of that pod.
	Records Records
	// HostNetNS is the node's network namespace (--host-netns), never a
	// pod's; the agent's own and PID 1's never are either.
	HostNetNS string
	// FindWait bounds the wait for the pod to reach the cache; zero means
	// DefaultFindWait.
	FindWait time.Duration

	once   sync.Once
	events chan crevent.GenericEvent
	mu     sync.Mutex
	hints  map[string]cri.Sandbox // by pod UID
	// answered: the pod's sandbox had an answer since its last request
	// (by pod UID). NRI keeps a request's hint until the sandbox stops,
	// so the hint alone does not say that an attach is awaited.
	answered map[string]bool
	waiters  map[string][]*attachWaiter
}

type attachWaiter struct {
	sandbox string
	done    chan error // buffered: Answer never blocks
}

var _ cnisocket.Attacher = (*Handshake)(nil)

func (s *Handshake) init() {
	s.once.Do(func() {
		s.events = make(chan crevent.GenericEvent, 1024)
		s.hints = map[string]cri.Sandbox{}
		s.answered = map[string]bool{}
		s.waiters = map[string][]*attachWaiter{}
	})
}

// Attach implements cnisocket.Attacher: it returns once the reconciler has
// answered for this sandbox, or ctx ended.
func (s *Handshake) Attach(ctx context.Context, req cnisocket.Request) error {
	t, err := s.Start(ctx, req)
	if err != nil {
		return err
	}
	defer t.Close()
	return t.Await(ctx)
}

// Ticket is one started attach of a sandbox: the chained CNI plugin awaits
// it at once, the NRI plugin when the pod's containers are created. Until
// Close the sandbox's hint stays recorded and the reconciler's answers for
// it are kept (the last one, for Await).
type Ticket struct {
	s   *Handshake
	uid string
	req cnisocket.Request
	w   *attachWaiter
	// interfaces are the names the verified approval lists.
	interfaces []string
}

// Start checks req against the cache, the approval's signature and the
// runtime's record of the sandbox, records the sandbox hint and enqueues
// the pod; the reconciler answers the Ticket after its attach. The one
// path of both the CNI socket and NRI.
func (s *Handshake) Start(ctx context.Context, req cnisocket.Request) (*Ticket, error) {
	return s.start(ctx, req, nil)
}

// StartFromRuntime is Start for a request the runtime itself sent (NRI's
// RunPodSandbox, over the runtime's socket the agent dialled): its pod UID
// and netns are the runtime's record of the sandbox, so the runtime is not
// asked again over CRI (a round trip of 5 to 500 ms while it sets up a
// burst of sandboxes). The netns is still checked to be a namespace, none
// of the node's or the agent's own. A request naming no netns (a sandbox
// recovered by a restarted runtime) is looked up as in Start.
func (s *Handshake) StartFromRuntime(ctx context.Context, req cnisocket.Request) (*Ticket, error) {
	return s.start(ctx, req, runtimeRecord(req))
}

// runtimeRecord is the record of its sandbox a request from the runtime
// brings: none when it names no netns.
func runtimeRecord(req cnisocket.Request) *cri.SandboxRecord {
	if req.NetNS == "" {
		return nil
	}
	return &cri.SandboxRecord{PodUID: req.UID, NetNS: req.NetNS}
}

// start is Start, with the runtime's record of the sandbox when the
// request brought it (nil: asked through Records).
func (s *Handshake) start(ctx context.Context, req cnisocket.Request, rec *cri.SandboxRecord) (*Ticket, error) {
	asked := time.Now()
	s.init()
	pod, err := s.findPod(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := admitSandboxRequest(pod, req, s.NodeName, s.Claimed != nil && s.Claimed(string(pod.UID))); err != nil {
		return nil, err
	}
	a, err := s.Verifier.Verify(pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: approval refused: %w", req.Namespace, req.Name, err)
	}
	if req.NetNS, err = s.checkSandboxNetNS(ctx, pod, req, rec); err != nil {
		return nil, err
	}
	t := &Ticket{s: s, uid: string(pod.UID), req: req, w: &attachWaiter{sandbox: req.SandboxID, done: make(chan error, 1)}}
	for _, ai := range a.Interfaces {
		t.interfaces = append(t.interfaces, ai.Interface)
	}
	s.mu.Lock()
	s.hints[t.uid] = cri.Sandbox{ID: req.SandboxID, NetNS: req.NetNS, Created: asked, IPs: req.IPs}
	delete(s.answered, t.uid)
	s.waiters[t.uid] = append(s.waiters[t.uid], t.w)
	s.mu.Unlock()
	t.enqueue()
	return t, nil
}

// Interfaces are the interface names the pod's verified approval lists.
func (t *Ticket) Interfaces() []string { return t.interfaces }

// NetNS is the netns the attach builds in, checked against the runtime's
// record of the sandbox.
func (t *Ticket) NetNS() string { return t.req.NetNS }

// Await returns the reconciler's next answer for the sandbox (or the one
// it gave since the last Await), or an error once ctx ended.
func (t *Ticket) Await(ctx context.Context) error {
	req := t.req
	select {
	case err := <-t.w.done:
		if err != nil {
			return fmt.Errorf("pod %s/%s sandbox %q: %w", req.Namespace, req.Name, req.SandboxID, err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pod %s/%s sandbox %q: networks not attached in time: %w", req.Namespace, req.Name, req.SandboxID, ctx.Err())
	}
}

// Again forgets an answer not awaited yet and enqueues the pod once more,
// so that the next Await waits for a fresh attach.
func (t *Ticket) Again() {
	select {
	case <-t.w.done:
	default:
	}
	t.enqueue()
}

// Close ends the ticket: its answers are no longer kept, and the hint goes
// once no ticket waits for the pod's sandbox.
func (t *Ticket) Close() { t.s.unwait(t.uid, t.w) }

func (t *Ticket) enqueue() {
	t.s.events <- crevent.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: t.req.Namespace, Name: t.req.Name}}}
}

// findPod reads the pod from the cache, waiting up to FindWait for it (or
// for the pod of this UID, when a new pod took an old one's name).
func (s *Handshake) findPod(ctx context.Context, req cnisocket.Request) (*corev1.Pod, error) {
	wait := s.FindWait
	if wait <= 0 {
		wait = DefaultFindWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	key := types.NamespacedName{Namespace: req.Namespace, Name: req.Name}
	for {
		var pod corev1.Pod
		err := s.Reader.Get(ctx, key, &pod)
		switch {
		case err == nil && string(pod.UID) == req.UID:
			return &pod, nil
		case err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil:
			return nil, fmt.Errorf("pod %s: read from the cache: %w", key, err)
		}
		select {
		case <-ctx.Done():
			if err == nil {
				return nil, fmt.Errorf("pod %s: uid %q is not the pod's (%q) on node %q", key, req.UID, pod.UID, s.NodeName)
			}
			return nil, fmt.Errorf("pod %s: not a pod of node %q known to the agent", key, s.NodeName)
		case <-time.After(findPoll):
		}
	}
}

// admitSandboxRequest says whether the agent attaches networks for pod in
// the sandbox of req: a pod of this node, on the pod network, not
// terminating, with an approval or a prepared claim.
func admitSandboxRequest(pod *corev1.Pod, req cnisocket.Request, node string, claimed bool) error {
	name := pod.Namespace + "/" + pod.Name
	switch {
	case string(pod.UID) != req.UID:
		return fmt.Errorf("pod %s: uid %q is not the pod's (%q)", name, req.UID, pod.UID)
	case pod.Spec.NodeName != node:
		return fmt.Errorf("pod %s: runs on node %q, not on this agent's node %q", name, pod.Spec.NodeName, node)
	case pod.Spec.HostNetwork:
		return fmt.Errorf("pod %s: uses the host network, podnet attaches nothing", name)
	case pod.DeletionTimestamp != nil:
		return fmt.Errorf("pod %s: is terminating", name)
	case pod.Annotations[v1alpha1.ApprovedAnnotation] == "" && !claimed:
		return fmt.Errorf("pod %s: has no %s annotation, podnet attaches nothing", name, v1alpha1.ApprovedAnnotation)
	}
	return nil
}

// Sandbox is the hint for the pod's sandbox, if a request is waiting.
func (s *Handshake) Sandbox(uid string) (cri.Sandbox, bool) {
	if s == nil {
		return cri.Sandbox{}, false
	}
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.hints[uid]
	return sb, ok
}

// Unanswered is when the pending request for the pod's sandbox was made,
// if no answer was given since: an attach that begins then is one the
// sandbox waits for, and is timed (podnet_agent_sandbox_setup_seconds).
func (s *Handshake) Unanswered(uid string) (time.Time, bool) {
	if s == nil {
		return time.Time{}, false
	}
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.hints[uid]
	if !ok || s.answered[uid] {
		return time.Time{}, false
	}
	return sb.Created, true
}

// Answer tells the requests waiting for the pod's sandbox (every sandbox
// of the pod when sandbox is "") that its networks are ready (nil) or why
// they are not. Nil-safe, so the reconciler calls it unconditionally.
func (s *Handshake) Answer(uid, sandbox string, err error) {
	if s == nil {
		return
	}
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	if hint, ok := s.hints[uid]; ok && (sandbox == "" || sandbox == hint.ID) {
		s.answered[uid] = true
	}
	for _, w := range s.waiters[uid] {
		if sandbox == "" || w.sandbox == sandbox {
			select {
			case w.done <- err:
			default:
			}
		}
	}
}

// Waiting is the number of requests waiting for an answer.
func (s *Handshake) Waiting() int {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ws := range s.waiters {
		n += len(ws)
	}
	return n
}

// unwait forgets a finished request, and the hint once no request waits
// for its sandbox: later lookups go through CRI, where the sandbox is
// READY by then.
func (s *Handshake) unwait(uid string, w *attachWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rest := s.waiters[uid][:0]
	for _, o := range s.waiters[uid] {
		if o != w {
			rest = append(rest, o)
		}
	}
	if len(rest) > 0 {
		s.waiters[uid] = rest
		return
	}
	delete(s.waiters, uid)
	delete(s.hints, uid)
	delete(s.answered, uid)
}

// Source feeds the controller the pods a request is waiting for, ahead
// of its other work.
func (s *Handshake) Source() source.Source {
	s.init()
	return source.Channel(s.events, podstate.Urgent())
}
