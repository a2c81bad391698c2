package nriprobe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultTimeout bounds one probe: a sandbox in the node's netns and a
// container create are quick; a runtime slower than this is not waited
// for, and the answer is Unknown.
const DefaultTimeout = 5 * time.Second

// cleanupTimeout bounds the removal of what the probe made, which runs
// even when the probe's own time is up.
const cleanupTimeout = 5 * time.Second

// Runtime is the part of the CRI runtime service the probe calls. The
// generated gRPC client satisfies it.
type Runtime interface {
	RunPodSandbox(ctx context.Context, in *runtimeapi.RunPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error)
	StopPodSandbox(ctx context.Context, in *runtimeapi.StopPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error)
	RemovePodSandbox(ctx context.Context, in *runtimeapi.RemovePodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error)
	CreateContainer(ctx context.Context, in *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error)
	RemoveContainer(ctx context.Context, in *runtimeapi.RemoveContainerRequest, opts ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error)
}

// Images is the part of the CRI image service the probe calls.
type Images interface {
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
}

// Prober probes a runtime through CRI.
type Prober struct {
	Runtime Runtime
	Images  Images
	// Timeout bounds a probe; zero means DefaultTimeout.
	Timeout time.Duration
}

// New returns a Prober on a CRI connection (cri.Dial's).
func New(conn grpc.ClientConnInterface) *Prober {
	return &Prober{Runtime: runtimeapi.NewRuntimeServiceClient(conn), Images: runtimeapi.NewImageServiceClient(conn)}
}

// Probe runs the probe once. Its error, with Unknown, says why the probe
// could not tell; an error removing what it made comes with the answer.
func (p *Prober) Probe(ctx context.Context) (res Result, err error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := p.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		return Unknown, fmt.Errorf("nri validator probe: list images: %w", err)
	}
	image := PinnedImage(list.GetImages())
	if image == "" {
		return Unknown, errors.New("nri validator probe: the runtime pins no image (its sandbox image) to create the probe's container from")
	}
	uid, err := newUID()
	if err != nil {
		return Unknown, err
	}
	cfg := sandboxConfig(uid)
	sb, err := p.Runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if sb.GetPodSandboxId() != "" {
		defer func() { err = errors.Join(err, p.removeSandbox(ctx, sb.GetPodSandboxId())) }()
	}
	if err != nil {
		return Unknown, fmt.Errorf("nri validator probe: run sandbox %s/%s: %w", SandboxNamespace, SandboxName, err)
	}
	ctr, createErr := p.Runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.GetPodSandboxId(), Config: containerConfig(image), SandboxConfig: cfg,
	})
	if id := ctr.GetContainerId(); id != "" {
		defer func() { err = errors.Join(err, p.removeContainer(ctx, id)) }()
	}
	if res = Meaning(createErr); res == Unknown {
		return Unknown, fmt.Errorf("nri validator probe: create container in sandbox %q: %w", sb.GetPodSandboxId(), createErr)
	}
	return res, nil
}

// removeContainer removes the probe's container by ID, with time of its
// own: the probe's may be up.
func (p *Prober) removeContainer(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := p.Runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("nri validator probe: remove container %q: %w", id, err)
	}
	return nil
}

// removeSandbox stops and removes the probe's sandbox by ID.
func (p *Prober) removeSandbox(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if _, err := p.Runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("nri validator probe: stop sandbox %q: %w", id, err)
	}
	if _, err := p.Runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("nri validator probe: remove sandbox %q: %w", id, err)
	}
	return nil
}

func newUID() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("nri validator probe: sandbox uid: %w", err)
	}
	return "podnet-probe-" + hex.EncodeToString(b), nil
}
