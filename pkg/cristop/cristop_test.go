package cristop

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime answers from a fixed list, ignoring the request's filter as
// a careless runtime might.
type fakeRuntime struct {
	containers []*runtimeapi.Container
	started    map[string]int64
	statusErr  map[string]error
	stopped    []*runtimeapi.StopContainerRequest
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if err := f.statusErr[in.ContainerId]; err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: in.ContainerId, State: runtimeapi.ContainerState_CONTAINER_RUNNING, StartedAt: f.started[in.ContainerId],
	}}, nil
}

func (f *fakeRuntime) StopContainer(_ context.Context, in *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	f.stopped = append(f.stopped, in)
	return &runtimeapi.StopContainerResponse{}, nil
}

func ctr(id, sandbox, uid, name string, state runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sandbox, State: state,
		Metadata: &runtimeapi.ContainerMetadata{Name: "meta-" + name},
		Labels:   map[string]string{podUIDLabel: uid, containerNameLabel: name},
	}
}

func TestRunningOnlyTheSandboxAndPodAskedFor(t *testing.T) {
	run := runtimeapi.ContainerState_CONTAINER_RUNNING
	noLabel := ctr("c5", "sb1", "u1", "", run)
	delete(noLabel.Labels, containerNameLabel)
	f := &fakeRuntime{
		containers: []*runtimeapi.Container{
			ctr("c1", "sb1", "u1", "app", run),
			ctr("c2", "sb2", "u1", "app", run),                                         // another sandbox
			ctr("c3", "sb1", "u2", "app", run),                                         // another pod's label
			ctr("c4", "sb1", "u1", "done", runtimeapi.ContainerState_CONTAINER_EXITED), // not running
			noLabel,
		},
		started: map[string]int64{"c1": 1_000_000_123, "c2": 7, "c3": 7, "c4": 7, "c5": 2_000_000_000},
	}
	got, err := Client{Runtime: f}.Running(context.Background(), "sb1", "u1")
	if err != nil {
		t.Fatal(err)
	}
	want := []Container{{ID: "c1", Name: "app", StartedAt: time.Unix(1, 123)}, {ID: "c5", Name: "meta-", StartedAt: time.Unix(2, 0)}}
	if len(got) != len(want) {
		t.Fatalf("Running = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Name != want[i].Name || !got[i].StartedAt.Equal(want[i].StartedAt) {
			t.Errorf("Running[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRunningReportsStatusErrorsAndKeepsTheRest(t *testing.T) {
	run := runtimeapi.ContainerState_CONTAINER_RUNNING
	f := &fakeRuntime{
		containers: []*runtimeapi.Container{ctr("c1", "sb1", "u1", "app", run), ctr("c2", "sb1", "u1", "side", run)},
		started:    map[string]int64{"c2": 5},
		statusErr:  map[string]error{"c1": errors.New("gone")},
	}
	got, err := Client{Runtime: f}.Running(context.Background(), "sb1", "u1")
	if err == nil || !strings.Contains(err.Error(), `container "c1"`) {
		t.Errorf("err = %v, want one naming c1", err)
	}
	if len(got) != 1 || got[0].ID != "c2" {
		t.Errorf("Running = %+v, want c2 only", got)
	}
}

func TestStopPassesTheGraceInSeconds(t *testing.T) {
	f := &fakeRuntime{}
	if err := (Client{Runtime: f}).Stop(context.Background(), "c1", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if len(f.stopped) != 1 || f.stopped[0].ContainerId != "c1" || f.stopped[0].Timeout != 2 {
		t.Errorf("stops = %+v, want c1 with timeout 2", f.stopped)
	}
}
