package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxRecord is what the runtime recorded of one sandbox when it made
// it: the pod it is for and its network namespace.
type SandboxRecord struct {
	PodUID string
	NetNS  string
}

// ErrNoRecord means the runtime reports no sandbox of that id.
var ErrNoRecord = errors.New("the runtime reports no such sandbox")

// containerdNamespace is the containerd namespace of the CRI plugin's
// objects, and containerdNamespaceHeader the gRPC header naming it.
const (
	containerdNamespace       = "k8s.io"
	containerdNamespaceHeader = "containerd-namespace"
	containerdGetContainer    = "/containerd.services.containers.v1.Containers/Get"
)

// RecordsDuringSetup says whether the runtime that names itself name in
// CRI's Version answer (runtime_name) reports a sandbox to SandboxByID
// while the sandbox's CNI plugins run: containerd does (its containers
// service, or its sandbox store); CRI-O reports a sandbox only once it is
// created, after them, and serves no other record on its socket.
func RecordsDuringSetup(name string) bool { return name == "containerd" }

// SandboxByID returns the runtime's record of the sandbox with this id,
// also while the sandbox is being set up. CRI reports a sandbox only once
// the runtime lists it, which containerd does only after the CNI plugins
// ran. Before it runs them, containerd 1.6's containers service holds the
// sandbox's container, with the pod's labels and the spec naming the
// network namespace; containerd 2 makes that container only after them,
// but its sandbox store holds the CRI's record of the sandbox (labels and
// network namespace) from the start. So CRI is asked first, then, when it
// does not know the id and the Resolver was dialled (Containers set),
// containerd's services on the same socket (containerdRecord).
func (r Resolver) SandboxByID(ctx context.Context, id string) (SandboxRecord, error) {
	st, err := r.Runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err == nil {
		path, err := NetNSFromInfo(st.GetInfo())
		if err != nil {
			return SandboxRecord{}, fmt.Errorf("sandbox %q: %w", id, err)
		}
		return SandboxRecord{PodUID: st.GetStatus().GetLabels()[PodUIDLabel], NetNS: path}, nil
	}
	if r.Containers == nil {
		return SandboxRecord{}, fmt.Errorf("sandbox %q: status: %w", id, err)
	}
	rec, cerr := containerdRecord(ctx, r.Containers, id)
	if cerr != nil {
		return SandboxRecord{}, fmt.Errorf("sandbox %q: CRI status: %v; containerd: %w", id, err, cerr)
	}
	return rec, nil
}

// containerdRecord asks containerd's containers service (containerd
// 1.6's record during setup), then, when it has no such container, the
// sandbox store (containerd 2's).
func containerdRecord(ctx context.Context, conn grpc.ClientConnInterface, id string) (SandboxRecord, error) {
	rec, err := containerdSandbox(ctx, conn, id)
	if !errors.Is(err, ErrNoRecord) {
		return rec, err
	}
	rec, serr := containerdStoredSandbox(ctx, conn, id)
	if serr != nil {
		return SandboxRecord{}, fmt.Errorf("containers service: %v; sandbox store: %w", err, serr)
	}
	return rec, nil
}

// containerdSandbox reads the sandbox's container from containerd's
// containers service. The messages are encoded here by hand (two fields
// in, two fields out) rather than through containerd's API module.
func containerdSandbox(ctx context.Context, conn grpc.ClientConnInterface, id string) (SandboxRecord, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, containerdNamespaceHeader, containerdNamespace)
	req := rawMessage(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), id))
	var resp rawMessage
	if err := conn.Invoke(ctx, containerdGetContainer, &req, &resp, grpc.ForceCodecV2(rawCodec{})); err != nil {
		if status.Code(err) == codes.NotFound {
			return SandboxRecord{}, fmt.Errorf("%w: %v", ErrNoRecord, err)
		}
		return SandboxRecord{}, fmt.Errorf("get container: %w", err)
	}
	labels, spec, err := decodeContainer(resp)
	if err != nil {
		return SandboxRecord{}, fmt.Errorf("container: %w", err)
	}
	var s ociSpec
	if err := json.Unmarshal(spec, &s); err != nil {
		return SandboxRecord{}, fmt.Errorf("container spec: %w", err)
	}
	path := s.networkPath()
	if path == "" {
		return SandboxRecord{}, errors.New("container spec names no network namespace path")
	}
	return SandboxRecord{PodUID: labels[PodUIDLabel], NetNS: path}, nil
}

// decodeContainer reads a GetContainerResponse: container (1) holds
// labels (2, map entries of key 1 and value 2) and spec (5, an Any whose
// value 2 is the OCI runtime spec as JSON).
func decodeContainer(b []byte) (map[string]string, []byte, error) {
	container, err := field(b, 1)
	if err != nil || container == nil {
		return nil, nil, errors.Join(errors.New("no container in the answer"), err)
	}
	labels := map[string]string{}
	var spec []byte
	err = fields(container, func(num protowire.Number, v []byte) error {
		switch num {
		case 2:
			key, value, err := mapEntry(v)
			labels[key] = string(value)
			return err
		case 5:
			spec, err = anyValue(v)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if spec == nil {
		return nil, nil, errors.New("container has no spec")
	}
	return labels, spec, nil
}

// mapEntry reads a protobuf map entry: key (1) and value (2).
func mapEntry(b []byte) (key string, value []byte, err error) {
	err = fields(b, func(n protowire.Number, v []byte) error {
		switch n {
		case 1:
			key = string(v)
		case 2:
			value = v
		}
		return nil
	})
	return key, value, err
}

// anyValue reads the value (2) of a google.protobuf.Any.
func anyValue(b []byte) ([]byte, error) { return field(b, 2) }

// field reads the length-delimited field num of a message (the last one,
// as protobuf does; nil when absent).
func field(b []byte, num protowire.Number) (value []byte, err error) {
	err = fields(b, func(n protowire.Number, v []byte) error {
		if n == num {
			value = v
		}
		return nil
	})
	return value, err
}

// fields calls f with each length-delimited field of a protobuf message
// and skips the others.
func fields(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("protobuf tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("protobuf field %d: %w", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("protobuf field %d: %w", num, protowire.ParseError(n))
		}
		if err := f(num, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// rawMessage is a protobuf message already encoded.
type rawMessage []byte

// rawCodec sends and receives rawMessages as they are, under gRPC's
// "proto" content subtype.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(*rawMessage)
	if !ok {
		return nil, fmt.Errorf("raw codec: %T is not a raw message", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(*m)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*rawMessage)
	if !ok {
		return fmt.Errorf("raw codec: %T is not a raw message", v)
	}
	*m = data.Materialize()
	return nil
}
