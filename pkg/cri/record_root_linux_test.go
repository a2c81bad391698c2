package cri_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
)

// notListed is a CRI runtime that lists no sandbox, as containerd 1.6
// during a sandbox's own CNI ADD.
type notListed struct{ cri.Runtime }

func (notListed) PodSandboxStatus(context.Context, *runtimeapi.PodSandboxStatusRequest, ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	return nil, status.Error(codes.NotFound, "not listed")
}

// checkSandboxRecord: the runtime reports the sandbox id's pod UID and
// network namespace through CRI, and through containerd's own services
// when CRI does not list it; an unknown id is ErrNoRecord. containerd 2
// (and only it) also answers from its sandbox store, where its CRI
// records the sandbox before the CNI plugins run (containerd 1.6 records
// a container then, containerd 2 only after); CRI-O reports through CRI
// alone. TestRootResolveContainerdSandbox calls it on each runtime.
func checkSandboxRecord(ctx context.Context, t *testing.T, runtime string, r *cri.Resolver, id string, want cri.SandboxRecord) {
	t.Helper()
	if got, err := r.SandboxByID(ctx, id); err != nil || got != want {
		t.Fatalf("through CRI: %+v, %v; want %+v", got, err, want)
	}
	unlisted := cri.Resolver{Runtime: notListed{r.Runtime}, Containers: r.Containers}
	if runtime == localcluster.RuntimeCRIO {
		// CRI-O serves no containerd service on its socket: what CRI does
		// not report is unknown, never someone else's record.
		if got, err := unlisted.SandboxByID(ctx, id); err == nil {
			t.Fatalf("CRI-O, sandbox not listed: %+v, want an error", got)
		}
		return
	}
	if got, err := unlisted.SandboxByID(ctx, id); err != nil || got != want {
		t.Fatalf("through containerd's containers service: %+v, %v; want %+v", got, err, want)
	}
	stored, err := cri.StoredSandbox(ctx, r.Containers, id)
	if runtime == localcluster.RuntimeContainerd2 && (err != nil || stored != want) {
		t.Fatalf("through containerd 2's sandbox store: %+v, %v; want %+v", stored, err, want)
	}
	if runtime != localcluster.RuntimeContainerd2 && !errors.Is(err, cri.ErrNoRecord) {
		t.Fatalf("containerd 1.6's sandbox store: %+v, %v; want ErrNoRecord (it has none)", stored, err)
	}
	_, err = unlisted.SandboxByID(ctx, "no-such-sandbox")
	if !errors.Is(err, cri.ErrNoRecord) || !strings.Contains(err.Error(), `"no-such-sandbox"`) {
		t.Fatalf("unknown sandbox: err = %v, want ErrNoRecord naming it", err)
	}
}
