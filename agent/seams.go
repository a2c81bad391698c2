package agent

import (
	"context"
	"net"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/dataplane"
)

// The reconciler reaches every side effect but the API server through these
// small interfaces, so its decisions have fast unit tests with fakes. Each
// has a real implementation with a real test: *cri.Resolver against
// containerd, *dataplane.Dataplane in network namespaces, the IPAM and the
// verifier against a real API server and real signatures.

// Sandboxes finds a pod's sandbox; it returns an error wrapping
// cri.ErrNoSandbox while there is none.
type Sandboxes interface {
	Sandbox(ctx context.Context, podUID string) (cri.Sandbox, error)
}

// Dataplane configures and removes a pod's interfaces.
type Dataplane interface {
	Apply(ctx context.Context, p dataplane.Pod) ([]dataplane.InterfaceStatus, error)
	Detach(ctx context.Context, uid, netns string) error
	CollectGarbage(ctx context.Context, live func(uid string) bool) ([]string, error)
}

// Addresses holds the IP addresses of pod interfaces.
type Addresses interface {
	// Ensure returns the addresses held for the pod's interface, reserving
	// them first if needed.
	Ensure(ctx context.Context, pod *corev1.Pod, ifc v1alpha1.ApprovedInterface) ([]net.IPNet, error)
	// Release frees what the pod holds for one network and interface; an
	// empty network and interface mean everything the pod holds.
	Release(ctx context.Context, pod podstate.Ref, network, iface string) error
}

var _ Sandboxes = (*cri.Resolver)(nil)
var _ Dataplane = (*dataplane.Dataplane)(nil)
