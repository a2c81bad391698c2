package sandbox

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/cri"
)

// Records is the runtime's record of a sandbox by id, also while it
// is being set up (cri.Resolver).
type Records interface {
	SandboxByID(ctx context.Context, id string) (cri.SandboxRecord, error)
}

// nsIdentity is what tells network namespaces apart: the device and inode
// of their nsfs file, whatever path names them.
type nsIdentity struct{ dev, ino uint64 }

// ownNetNS are the namespaces a sandbox request may never name, by what
// they are: the agent's own, PID 1's and the node's (--host-netns). The
// agent's own is the asking thread's: an unlocked goroutine's thread is
// always in the agent's netns, while /proc/self names the main thread's,
// which a locked goroutine may have taken elsewhere for a moment.
func ownNetNS(hostNetNS string) map[string]string {
	own := map[string]string{"/proc/thread-self/ns/net": "the agent's own", "/proc/1/ns/net": "the node's (PID 1's)"}
	if hostNetNS != "" {
		own[hostNetNS] = "the node's (--host-netns)"
	}
	return own
}

// checkSandboxNetNS makes sure the netns a request names is the one the
// runtime recorded for that sandbox of that pod (known, when the runtime
// sent the request itself; else asked through Records), and none of the
// node's or the agent's own: the agent never builds interfaces in a
// namespace only because a request names it. It returns the netns to
// attach into: the request's, or the runtime's record when the request
// names none.
func (s *Handshake) checkSandboxNetNS(ctx context.Context, pod *corev1.Pod, req cnisocket.Request, known *cri.SandboxRecord) (string, error) {
	name := pod.Namespace + "/" + pod.Name
	var rec cri.SandboxRecord
	switch {
	case known != nil:
		rec = *known
	case s.Records == nil:
		return "", fmt.Errorf("pod %s: sandbox %q: the agent has no runtime to ask about it", name, req.SandboxID)
	default:
		var err error
		if rec, err = s.Records.SandboxByID(ctx, req.SandboxID); err != nil {
			return "", fmt.Errorf("pod %s: sandbox %q: %w", name, req.SandboxID, err)
		}
	}
	req.NetNS = sandboxNetNSPath(req.NetNS, rec.NetNS)
	got, err := netnsIdentity(req.NetNS)
	if err != nil {
		return "", fmt.Errorf("pod %s: netns %q: %w", name, req.NetNS, err)
	}
	forbidden := map[nsIdentity]string{}
	for path, what := range ownNetNS(s.HostNetNS) {
		// A path that does not resolve names no namespace to protect.
		if id, err := netnsIdentity(path); err == nil {
			forbidden[id] = what
		}
	}
	recorded, err := netnsIdentity(rec.NetNS)
	if err != nil {
		return "", fmt.Errorf("pod %s: sandbox %q: the runtime's netns %q: %w", name, req.SandboxID, rec.NetNS, err)
	}
	return req.NetNS, judgeSandboxNetNS(pod, req, got, forbidden, rec, recorded)
}

// sandboxNetNSPath is the netns a sandbox request attaches into: the one
// it names, or, when it names none (a runtime that recovered the sandbox
// without its spec reports no namespaces to NRI), the one the runtime
// recorded for the sandbox through CRI.
func sandboxNetNSPath(requested, recorded string) string {
	if requested != "" {
		return requested
	}
	return recorded
}

// judgeSandboxNetNS is the decision of checkSandboxNetNS, on what it
// gathered: the requested namespace's identity, the forbidden ones, and
// the runtime's record of the sandbox with its namespace's identity.
func judgeSandboxNetNS(pod *corev1.Pod, req cnisocket.Request, got nsIdentity, forbidden map[nsIdentity]string, rec cri.SandboxRecord, recorded nsIdentity) error {
	name := pod.Namespace + "/" + pod.Name
	switch {
	case forbidden[got] != "":
		return fmt.Errorf("pod %s: netns %q: is %s network namespace, never a pod's", name, req.NetNS, forbidden[got])
	case rec.PodUID != string(pod.UID):
		return fmt.Errorf("pod %s: sandbox %q: the runtime made it for pod uid %q, not %q", name, req.SandboxID, rec.PodUID, pod.UID)
	case got != recorded:
		return fmt.Errorf("pod %s: netns %q: not the network namespace the runtime made for sandbox %q (%q)", name, req.NetNS, req.SandboxID, rec.NetNS)
	}
	return nil
}
