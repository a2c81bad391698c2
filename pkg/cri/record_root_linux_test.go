package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/pkg/cri"
)

// notListed is a CRI runtime that lists no sandbox, as containerd 1.6
// during a sandbox's own CNI ADD.
type notListed struct{ cri.Runtime }

func (notListed) PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	return nil, status.Error(codes.NotFound, "not listed")
}

// TestRootSandboxRecordFromContainerd: a real containerd 1.6 reports a
// sandbox's pod UID and network namespace by sandbox id through CRI, and
// through its own containers service when CRI does not list it; an
// unknown id is ErrNoRecord.
func TestRootSandboxRecordFromContainerd(t *testing.T) {
	c, r := startContainerd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	uid := randomUID(t)
	id, err := c.RunSandbox(ctx, "ns1", "pod1", uid)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := r.Sandbox(ctx, uid)
	if err != nil {
		t.Fatal(err)
	}
	want := cri.SandboxRecord{PodUID: uid, NetNS: sb.NetNS}
	if got, err := r.SandboxByID(ctx, id); err != nil || got != want {
		t.Fatalf("through CRI: %+v, %v; want %+v", got, err, want)
	}
	unlisted := cri.Resolver{Runtime: notListed{r.Runtime}, Containers: r.Containers}
	if got, err := unlisted.SandboxByID(ctx, id); err != nil || got != want {
		t.Fatalf("through containerd's containers service: %+v, %v; want %+v", got, err, want)
	}
	_, err = unlisted.SandboxByID(ctx, "no-such-sandbox")
	if !errors.Is(err, cri.ErrNoRecord) || !strings.Contains(err.Error(), `"no-such-sandbox"`) {
		t.Fatalf("unknown sandbox: err = %v, want ErrNoRecord naming it", err)
	}
}
