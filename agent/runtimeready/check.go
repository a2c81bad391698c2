package runtimeready

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ReasonUnreachable is the Event reason on the Node while the runtime does
// not answer.
const ReasonUnreachable = "ContainerRuntimeUnreachable"

// Recorder records an Event (events.EventRecorder's method).
type Recorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Check asks the runtime for its version, at most once per Every; readiness
// probes in between get the last answer.
type Check struct {
	// Endpoint is the --cri-endpoint, named in every error.
	Endpoint string
	Runtime  runtimeapi.RuntimeServiceClient
	NodeName string
	Events   Recorder
	// Every is how often the runtime is asked (default 5s); Timeout bounds
	// one call (default 2s).
	Every, Timeout time.Duration

	mu     sync.Mutex
	asked  time.Time
	err    error
	warned bool
}

// Ready is a healthz.Checker: nil while the runtime answers.
func (c *Check) Ready(req *http.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.asked.IsZero() && time.Since(c.asked) < or(c.Every, 5*time.Second) {
		return c.err
	}
	ctx, cancel := context.WithTimeout(req.Context(), or(c.Timeout, 2*time.Second))
	defer cancel()
	_, err := c.Runtime.Version(ctx, &runtimeapi.VersionRequest{})
	c.asked = time.Now()
	c.err = nil
	if err != nil {
		c.err = Unreachable(c.Endpoint, err)
		if !c.warned && c.Events != nil {
			node := &corev1.ObjectReference{Kind: "Node", Name: c.NodeName, UID: types.UID(c.NodeName)}
			c.Events.Eventf(node, nil, corev1.EventTypeWarning, ReasonUnreachable, "CheckRuntime", "%s", c.err.Error())
		}
	}
	c.warned = err != nil
	return c.err
}

// Unreachable is what the agent says when the runtime does not answer on
// endpoint: the error, and where the runtimes users have serve CRI.
func Unreachable(endpoint string, err error) error {
	return fmt.Errorf("container runtime not answering on --cri-endpoint %s (Helm: agent.cri.endpoint): %w; "+
		"containerd serves CRI on unix:///run/containerd/containerd.sock, CRI-O on unix:///var/run/crio/crio.sock", endpoint, err)
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
