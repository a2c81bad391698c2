package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodUIDLabel is the label the kubelet puts on every sandbox it creates.
const PodUIDLabel = "io.kubernetes.pod.uid"

// infoKey is the key of the verbose status document in both containerd and
// CRI-O.
const infoKey = "info"

// ErrNoSandbox means the runtime has no READY sandbox for the pod (yet, or
// any more). Callers retry later.
var ErrNoSandbox = errors.New("no ready pod sandbox")

// Runtime is the part of the CRI runtime service this package calls. The
// generated gRPC client satisfies it; unit tests use a fake.
type Runtime interface {
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpcCallOption) (*runtimeapi.ListPodSandboxResponse, error)
	PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, opts ...grpcCallOption) (*runtimeapi.PodSandboxStatusResponse, error)
}

// Sandbox is what the agent needs to know of a pod's sandbox.
type Sandbox struct {
	// ID of the sandbox in the runtime.
	ID string
	// NetNS is the path of the sandbox's network namespace.
	NetNS string
	// Created is when the runtime created the sandbox.
	Created time.Time
	// IPs are the addresses of the pod's default network (eth0) as the
	// runtime reports them, primary first: the same list the kubelet copies
	// into status.podIPs, known here as soon as the sandbox is READY,
	// before the kubelet's next status update. Empty when the runtime
	// reports none (a host-network sandbox).
	IPs []string
}

// Resolver finds pod sandboxes through a Runtime.
type Resolver struct {
	Runtime Runtime
	// Containers, when set, is the runtime's connection, on which
	// SandboxByID asks containerd's own containers service about a
	// sandbox CRI does not list yet.
	Containers grpc.ClientConnInterface
}

// Sandbox returns the READY sandbox of the pod with the given UID. When the
// runtime lists more than one (a sandbox being replaced), the newest wins,
// since the kubelet starts containers only in the newest. It returns an error
// wrapping ErrNoSandbox when there is none.
func (r Resolver) Sandbox(ctx context.Context, podUID string) (Sandbox, error) {
	list, err := r.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{
			State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
			LabelSelector: map[string]string{PodUIDLabel: podUID},
		},
	})
	if err != nil {
		return Sandbox{}, fmt.Errorf("pod %q: list sandboxes: %w", podUID, err)
	}
	newest := newestReady(list.GetItems(), podUID)
	if newest == nil {
		return Sandbox{}, fmt.Errorf("pod %q: %w", podUID, ErrNoSandbox)
	}
	st, err := r.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: newest.Id, Verbose: true})
	if err != nil {
		return Sandbox{}, fmt.Errorf("pod %q sandbox %q: status: %w", podUID, newest.Id, err)
	}
	if st.GetStatus().GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
		return Sandbox{}, fmt.Errorf("pod %q sandbox %q: %w", podUID, newest.Id, ErrNoSandbox)
	}
	path, err := NetNSFromInfo(st.GetInfo())
	if err != nil {
		return Sandbox{}, fmt.Errorf("pod %q sandbox %q: %w", podUID, newest.Id, err)
	}
	return Sandbox{ID: newest.Id, NetNS: path, Created: time.Unix(0, newest.CreatedAt), IPs: sandboxIPs(st.GetStatus().GetNetwork())}, nil
}

// sandboxIPs lists the addresses of a sandbox's network status: the
// primary address, then the additional ones, skipping empty entries.
func sandboxIPs(n *runtimeapi.PodSandboxNetworkStatus) []string {
	var out []string
	if ip := n.GetIp(); ip != "" {
		out = append(out, ip)
	}
	for _, a := range n.GetAdditionalIps() {
		if ip := a.GetIp(); ip != "" {
			out = append(out, ip)
		}
	}
	return out
}

// newestReady picks the newest READY sandbox that really carries the UID
// label, and the UID in its metadata: a runtime that ignores the filter
// must not hand us another pod, and neither may a pod that puts the label
// on itself. The kubelet writes its own label over a pod's, and the
// metadata it takes from the pod object alone, which the pod's labels
// cannot reach.
func newestReady(items []*runtimeapi.PodSandbox, podUID string) *runtimeapi.PodSandbox {
	var newest *runtimeapi.PodSandbox
	for _, s := range items {
		if s.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY || s.GetLabels()[PodUIDLabel] != podUID || s.GetMetadata().GetUid() != podUID {
			continue
		}
		if newest == nil || s.CreatedAt > newest.CreatedAt {
			newest = s
		}
	}
	return newest
}

// statusInfo is the part of the verbose status document read here.
type statusInfo struct {
	Pid         int      `json:"pid"`
	RuntimeSpec *ociSpec `json:"runtimeSpec"`
	// Metadata is containerd's stored record of the sandbox, which it
	// keeps across its own restarts, when a recovered sandbox's
	// runtimeSpec may be missing.
	Metadata *struct {
		Metadata struct {
			NetNSPath string `json:"NetNSPath"`
		} `json:"Metadata"`
	} `json:"sandboxMetadata"`
}

// ociSpec is the part of an OCI runtime spec read here.
type ociSpec struct {
	Linux *struct {
		Namespaces []struct {
			Type string `json:"type"`
			Path string `json:"path"`
		} `json:"namespaces"`
	} `json:"linux"`
}

// networkPath is the spec's network namespace path, or "".
func (s *ociSpec) networkPath() string {
	if s == nil || s.Linux == nil {
		return ""
	}
	for _, n := range s.Linux.Namespaces {
		if n.Type == "network" && n.Path != "" {
			return n.Path
		}
	}
	return ""
}

// NetNSFromInfo returns the network namespace path from the Info map of a
// verbose PodSandboxStatus response: the runtime spec's network namespace
// path, else the one in containerd's stored sandbox metadata (a sandbox
// recovered by a restarted containerd 2 may report no spec), else
// /proc/<pid>/ns/net of the sandbox process.
func NetNSFromInfo(info map[string]string) (string, error) {
	raw, ok := info[infoKey]
	if !ok || raw == "" {
		return "", fmt.Errorf("verbose status has no %q document (is this a CRI runtime that supports verbose status?)", infoKey)
	}
	var si statusInfo
	if err := json.Unmarshal([]byte(raw), &si); err != nil {
		return "", fmt.Errorf("decode verbose status %q: %w", infoKey, err)
	}
	if path := si.RuntimeSpec.networkPath(); path != "" {
		return path, nil
	}
	if si.Metadata != nil && si.Metadata.Metadata.NetNSPath != "" {
		return si.Metadata.Metadata.NetNSPath, nil
	}
	if si.Pid > 0 {
		return "/proc/" + strconv.Itoa(si.Pid) + "/ns/net", nil
	}
	return "", errors.New("verbose status names neither a network namespace path nor a sandbox pid")
}
