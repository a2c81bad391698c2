package agent

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/sandbox"
	"podnet.io/podnet/pkg/cri"
)

// SandboxSetups are the sandboxes whose setup waits for their pod's
// attach: the chained CNI plugin's and NRI's requests
// (*sandbox.Handshake). The reconcile attaches into the sandbox a request
// names and answers it.
type SandboxSetups interface {
	// Sandbox is the sandbox a request waits in, if one does.
	Sandbox(uid string) (cri.Sandbox, bool)
	// Unanswered is when that request was made, if it had no answer yet.
	Unanswered(uid string) (time.Time, bool)
	// Answer tells the requests for the pod's sandbox (every sandbox of
	// the pod when sandbox is "") that its networks are ready, or why not.
	Answer(uid, sandbox string, err error)
	// Source wakes the pods a request waits for.
	Source() source.Source
}

// SandboxPoll holds the pods that found no sandbox until theirs appears,
// one node-wide poll for all (*sandbox.Watch).
type SandboxPoll interface {
	Wait(key types.NamespacedName, uid string)
	Forget(uid string)
	// Source wakes the pods whose sandbox appeared.
	Source() source.Source
	// Start polls until ctx ends (manager.Runnable).
	Start(ctx context.Context) error
}

var (
	_ SandboxSetups = (*sandbox.Handshake)(nil)
	_ SandboxPoll   = (*sandbox.Watch)(nil)
)

// errTerminating answers the requests of a pod deleted while they wait.
var errTerminating = errors.New("the pod is terminating")

// setups is Attaches, or none: without a sandbox-setup path no request
// ever waits.
func (r *Reconciler) setups() SandboxSetups {
	if r.Attaches == nil {
		return noSetups{}
	}
	return r.Attaches
}

type noSetups struct{}

func (noSetups) Sandbox(string) (cri.Sandbox, bool)  { return cri.Sandbox{}, false }
func (noSetups) Unanswered(string) (time.Time, bool) { return time.Time{}, false }
func (noSetups) Answer(string, string, error)        {}
func (noSetups) Source() source.Source               { return nil }
