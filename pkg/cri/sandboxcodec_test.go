package cri

import (
	"testing"

	"google.golang.org/grpc/mem"
	protov2 "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestSandboxFilterCodecKeepsOnlyTheWaitingPods decodes a ListPodSandbox
// answer as the generated code encodes it, with everything a runtime
// puts in a sandbox, and keeps the state and UID label of the sandboxes
// of the pods asked for, in order, and nothing of the others.
func TestSandboxFilterCodecKeepsOnlyTheWaitingPods(t *testing.T) {
	sandbox := func(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
		labels := map[string]string{"app": "x", "io.kubernetes.pod.name": "p-" + id}
		if uid != "" {
			labels[PodUIDLabel] = uid
		}
		return &runtimeapi.PodSandbox{
			Id: id, State: state, CreatedAt: 1700000000000000000, RuntimeHandler: "runc", Labels: labels,
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: "p-" + id, Uid: "meta-" + uid, Namespace: "ns", Attempt: 1},
			Annotations: map[string]string{"podnet.io/networks": "net1", PodUIDLabel: "not-the-label"},
		}
	}
	resp := &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		sandbox("a", "uid-a", runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("b", "uid-b", runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("c", "uid-c", runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
		sandbox("d", "", runtimeapi.PodSandboxState_SANDBOX_READY),
	}}
	wire, err := protov2.Marshal(protoadapt.MessageV2Of(resp))
	if err != nil {
		t.Fatal(err)
	}
	waiting := map[string]bool{"uid-b": true, "uid-c": true, "not-the-label": true}
	var asked []string
	codec := sandboxFilterCodec{unpooledCodec: unpooledCodec{}, keep: func(uid []byte) bool {
		asked = append(asked, string(uid))
		return waiting[string(uid)]
	}}
	var got runtimeapi.ListPodSandboxResponse
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire)}, &got); err != nil {
		t.Fatal(err)
	}
	want := []*runtimeapi.PodSandbox{
		{State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: map[string]string{PodUIDLabel: "uid-b"}},
		{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: map[string]string{PodUIDLabel: "uid-c"}},
	}
	if len(got.Items) != len(want) {
		t.Fatalf("kept %v, want %v", got.Items, want)
	}
	for i := range want {
		if !protov2.Equal(protoadapt.MessageV2Of(got.Items[i]), protoadapt.MessageV2Of(want[i])) {
			t.Errorf("item %d: %v, want %v", i, got.Items[i], want[i])
		}
	}
	if len(asked) != 3 {
		t.Errorf("keep asked about %q; want the three sandboxes with a UID label", asked)
	}
	if err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(wire[:len(wire)-3])}, &got); err == nil {
		t.Error("a cut answer gave no error")
	}
}
