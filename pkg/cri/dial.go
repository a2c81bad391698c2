package cri

import (
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	protov2 "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// grpcCallOption keeps the Runtime interface identical to the generated
// client's method set.
type grpcCallOption = grpc.CallOption

// Dial connects to the CRI runtime service at a unix socket path (with or
// without the unix:// prefix). The connection is lazy: a runtime that is not
// up yet makes calls fail, not Dial. Close the returned connection when done.
func Dial(endpoint string) (*Resolver, *grpc.ClientConn, error) {
	path := strings.TrimPrefix(endpoint, "unix://")
	if path == "" || strings.Contains(path, "://") {
		return nil, nil, fmt.Errorf("CRI endpoint %q: want a unix socket path", endpoint)
	}
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(unpooledCodec{encoding.GetCodecV2(proto.Name)})))
	if err != nil {
		return nil, nil, fmt.Errorf("CRI endpoint %q: %w", endpoint, err)
	}
	return &Resolver{Runtime: runtimeapi.NewRuntimeServiceClient(conn), Containers: conn}, conn, nil
}

// unpooledCodec is gRPC's proto codec except that each answer is read from
// a buffer of its own size instead of one of gRPC's pooled buffers. A
// node-wide ListPodSandbox answer takes a pooled buffer of 1 MiB, and the
// pool keeps a few of those alive long after the node is listed: live heap
// the garbage collector then doubles into the agent's resident memory.
//
// Its Name is empty: gRPC sends a forced codec's name as the content
// subtype ("application/grpc+proto"), and CRI-O, which serves gRPC and
// HTTP on one socket, hands only "application/grpc" to its gRPC server;
// anything else reaches its HTTP server, which closes the connection.
type unpooledCodec struct{ encoding.CodecV2 }

func (unpooledCodec) Name() string { return "" }

func (c unpooledCodec) Unmarshal(data mem.BufferSlice, v any) error {
	var m protov2.Message
	switch v := v.(type) {
	case protoadapt.MessageV2:
		m = v
	case protoadapt.MessageV1:
		m = protoadapt.MessageV2Of(v)
	default:
		return fmt.Errorf("cri answer %T: not a protobuf message", v)
	}
	return protov2.Unmarshal(data.Materialize(), m)
}
