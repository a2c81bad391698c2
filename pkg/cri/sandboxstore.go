package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

// containerdGetSandbox is containerd's sandbox store (containerd 1.7 and
// 2.x). containerd 2's CRI records a sandbox there, with its CRI config
// and its network namespace, before it runs the CNI plugins; it creates
// the sandbox's container only after them, so during a sandbox's own CNI
// ADD neither CRI nor the containers service knows it.
const containerdGetSandbox = "/containerd.services.sandbox.v1.Store/Get"

// criMetadataExtension is the extension under which containerd's CRI
// keeps its sandbox metadata, as JSON (a versioned envelope around it).
const criMetadataExtension = "metadata"

// criSandboxMetadata is the part of that metadata read here. The UID is
// the kubelet's label, the same one the containers service's record
// carries, so both paths judge a sandbox by the same value.
type criSandboxMetadata struct {
	Version  string
	Metadata struct {
		ID     string
		Config struct {
			Labels map[string]string `json:"labels"`
		}
		NetNSPath string
	}
}

// containerdStoredSandbox reads the sandbox's record from containerd's
// sandbox store. It wraps ErrNoRecord when the store has no such sandbox
// or the runtime has no sandbox store (containerd 1.6).
func containerdStoredSandbox(ctx context.Context, conn grpc.ClientConnInterface, id string) (SandboxRecord, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, containerdNamespaceHeader, containerdNamespace)
	req := rawMessage(protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), id))
	var resp rawMessage
	if err := conn.Invoke(ctx, containerdGetSandbox, &req, &resp, grpc.ForceCodecV2(rawCodec{})); err != nil {
		if c := status.Code(err); c == codes.NotFound || c == codes.Unimplemented {
			return SandboxRecord{}, fmt.Errorf("%w: %v", ErrNoRecord, err)
		}
		return SandboxRecord{}, fmt.Errorf("get sandbox: %w", err)
	}
	raw, err := decodeSandboxExtension(resp, criMetadataExtension)
	if err != nil {
		return SandboxRecord{}, fmt.Errorf("stored sandbox: %w", err)
	}
	return recordFromCRIMetadata(id, raw)
}

// recordFromCRIMetadata reads the pod UID and the network namespace of
// sandbox id from the CRI's metadata document.
func recordFromCRIMetadata(id string, raw []byte) (SandboxRecord, error) {
	var m criSandboxMetadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return SandboxRecord{}, fmt.Errorf("stored sandbox's CRI metadata: %w", err)
	}
	switch {
	case m.Version != "v1":
		return SandboxRecord{}, fmt.Errorf("stored sandbox's CRI metadata: version %q, want \"v1\"", m.Version)
	case m.Metadata.ID != id:
		return SandboxRecord{}, fmt.Errorf("stored sandbox's CRI metadata names sandbox %q", m.Metadata.ID)
	case m.Metadata.NetNSPath == "":
		return SandboxRecord{}, errors.New("stored sandbox's CRI metadata names no network namespace path (yet)")
	}
	return SandboxRecord{PodUID: m.Metadata.Config.Labels[PodUIDLabel], NetNS: m.Metadata.NetNSPath}, nil
}

// decodeSandboxExtension reads a StoreGetResponse: sandbox (1) holds
// extensions (7, map entries of key 1 and value 2, an Any whose value 2
// is the document), and returns the document under key.
func decodeSandboxExtension(b []byte, key string) ([]byte, error) {
	sandbox, err := field(b, 1)
	if err != nil || sandbox == nil {
		return nil, errors.Join(errors.New("no sandbox in the answer"), err)
	}
	var doc []byte
	err = fields(sandbox, func(num protowire.Number, v []byte) error {
		if num != 7 {
			return nil
		}
		k, value, err := mapEntry(v)
		if err != nil || k != key {
			return err
		}
		doc, err = anyValue(value)
		return err
	})
	if err != nil {
		return nil, err
	}
	if doc == nil {
		return nil, fmt.Errorf("sandbox has no %q extension", key)
	}
	return doc, nil
}
