package cri

import (
	"fmt"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
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
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("CRI endpoint %q: %w", endpoint, err)
	}
	return &Resolver{Runtime: runtimeapi.NewRuntimeServiceClient(conn)}, conn, nil
}
