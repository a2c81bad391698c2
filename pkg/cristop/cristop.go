package cristop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// podUIDLabel and containerNameLabel are the labels the kubelet puts on
// every container it creates.
const (
	podUIDLabel        = "io.kubernetes.pod.uid"
	containerNameLabel = "io.kubernetes.container.name"
)

// Runtime is the part of the CRI runtime service this package calls. The
// generated gRPC client satisfies it; unit tests use a fake.
type Runtime interface {
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, opts ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error)
	StopContainer(ctx context.Context, in *runtimeapi.StopContainerRequest, opts ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error)
}

// Container is a running container of a sandbox.
type Container struct {
	// ID is the runtime's container id.
	ID string
	// Name is the container's name in the pod spec (the kubelet's label,
	// else the CRI metadata name).
	Name string
	// StartedAt is when the runtime started it, on the node's clock.
	StartedAt time.Time
}

// Client lists and stops containers through Runtime.
type Client struct {
	Runtime Runtime
}

// New returns a Client on a CRI connection (cri.Dial's).
func New(conn grpc.ClientConnInterface) Client {
	return Client{Runtime: runtimeapi.NewRuntimeServiceClient(conn)}
}

// Running lists the running containers of sandbox that belong to the pod
// with UID podUID, with their start times.
func (c Client) Running(ctx context.Context, sandbox, podUID string) ([]Container, error) {
	list, err := c.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		PodSandboxId: sandbox,
		State:        &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		return nil, fmt.Errorf("sandbox %q: list containers: %w", sandbox, err)
	}
	var out []Container
	var errs []error
	for _, ctr := range list.GetContainers() {
		if !ofSandbox(ctr, sandbox, podUID) {
			continue
		}
		st, err := c.Runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: ctr.GetId()})
		if err != nil {
			errs = append(errs, fmt.Errorf("sandbox %q container %q: status: %w", sandbox, ctr.GetId(), err))
			continue
		}
		s := st.GetStatus()
		if s.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || s.GetStartedAt() == 0 {
			continue
		}
		out = append(out, Container{ID: ctr.GetId(), Name: nameOf(ctr), StartedAt: time.Unix(0, s.GetStartedAt())})
	}
	return out, errors.Join(errs...)
}

// ofSandbox says whether a listed container is a running container of
// the sandbox and pod asked for.
func ofSandbox(ctr *runtimeapi.Container, sandbox, podUID string) bool {
	return ctr.GetPodSandboxId() == sandbox && ctr.GetLabels()[podUIDLabel] == podUID &&
		ctr.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
}

func nameOf(ctr *runtimeapi.Container) string {
	if n := ctr.GetLabels()[containerNameLabel]; n != "" {
		return n
	}
	return ctr.GetMetadata().GetName()
}

// Stop stops the container: the runtime sends its stop signal and, after
// grace (none: at once), SIGKILL.
func (c Client) Stop(ctx context.Context, id string, grace time.Duration) error {
	_, err := c.Runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: int64(grace / time.Second)})
	if err != nil {
		return fmt.Errorf("container %q: stop: %w", id, err)
	}
	return nil
}
