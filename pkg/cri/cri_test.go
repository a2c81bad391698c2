package cri

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime answers from fixed sandboxes and records what it was asked.
type fakeRuntime struct {
	items    []*runtimeapi.PodSandbox
	info     map[string]map[string]string
	network  map[string]*runtimeapi.PodSandboxNetworkStatus
	state    runtimeapi.PodSandboxState
	listErr  error
	gotLabel map[string]string
	gotState runtimeapi.PodSandboxState
	statusOf []string
}

func (f *fakeRuntime) ListPodSandbox(_ context.Context, in *runtimeapi.ListPodSandboxRequest, _ ...grpcCallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	f.gotLabel = in.GetFilter().GetLabelSelector()
	f.gotState = in.GetFilter().GetState().GetState()
	return &runtimeapi.ListPodSandboxResponse{Items: f.items}, f.listErr
}

func (f *fakeRuntime) PodSandboxStatus(_ context.Context, in *runtimeapi.PodSandboxStatusRequest, _ ...grpcCallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.statusOf = append(f.statusOf, in.PodSandboxId)
	if !in.Verbose {
		return nil, errors.New("not verbose")
	}
	return &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{Id: in.PodSandboxId, State: f.state, Network: f.network[in.PodSandboxId]},
		Info:   f.info[in.PodSandboxId],
	}, nil
}

func sandbox(id, uid string, created int64, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, CreatedAt: created, State: state, Labels: map[string]string{PodUIDLabel: uid},
		Metadata: &runtimeapi.PodSandboxMetadata{Uid: uid}}
}

const containerdInfo = `{"pid":4242,"processStatus":"running","runtimeSpec":{"linux":{"namespaces":[{"type":"pid"},{"type":"ipc"},{"type":"network","path":"/var/run/netns/cni-1234"}]}}}`

func TestResolverPicksNewestReadySandboxOfThePod(t *testing.T) {
	f := &fakeRuntime{
		items: []*runtimeapi.PodSandbox{
			sandbox("old", "u1", 100, runtimeapi.PodSandboxState_SANDBOX_READY),
			sandbox("new", "u1", 200, runtimeapi.PodSandboxState_SANDBOX_READY),
			sandbox("notready", "u1", 300, runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
			sandbox("other", "u2", 400, runtimeapi.PodSandboxState_SANDBOX_READY),
			// A pod of UID u2 that labels itself with u1: the label
			// alone does not make it u1's.
			{Id: "spoof", CreatedAt: 500, State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: map[string]string{PodUIDLabel: "u1"},
				Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u2"}},
		},
		info: map[string]map[string]string{"new": {"info": containerdInfo}},
		network: map[string]*runtimeapi.PodSandboxNetworkStatus{
			"new": {Ip: "10.244.0.7", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00:10:244::7"}}},
			"old": {Ip: "10.244.0.6"},
		},
		state: runtimeapi.PodSandboxState_SANDBOX_READY,
	}
	sb, err := Resolver{Runtime: f}.Sandbox(context.Background(), "u1")
	if err != nil {
		t.Fatal(err)
	}
	if sb.ID != "new" || sb.NetNS != "/var/run/netns/cni-1234" || sb.Created.UnixNano() != 200 {
		t.Fatalf("got %+v, want sandbox new with its netns", sb)
	}
	if want := []string{"10.244.0.7", "fd00:10:244::7"}; !slices.Equal(sb.IPs, want) {
		t.Fatalf("IPs = %q, want the new sandbox's %q", sb.IPs, want)
	}
	if f.gotLabel[PodUIDLabel] != "u1" || f.gotState != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("list filter = %v state %v, want the pod UID label and READY", f.gotLabel, f.gotState)
	}
	if len(f.statusOf) != 1 || f.statusOf[0] != "new" {
		t.Fatalf("status asked for %v, want only [new]", f.statusOf)
	}
}

func TestResolverNoSandbox(t *testing.T) {
	for name, f := range map[string]*fakeRuntime{
		"none":          {},
		"other pod":     {items: []*runtimeapi.PodSandbox{sandbox("x", "u2", 1, runtimeapi.PodSandboxState_SANDBOX_READY)}},
		"stopped since": {items: []*runtimeapi.PodSandbox{sandbox("x", "u1", 1, runtimeapi.PodSandboxState_SANDBOX_READY)}, state: runtimeapi.PodSandboxState_SANDBOX_NOTREADY},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Resolver{Runtime: f}.Sandbox(context.Background(), "u1")
			if !errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), `"u1"`) {
				t.Fatalf("err = %v, want ErrNoSandbox naming the pod", err)
			}
		})
	}
}

func TestResolverListError(t *testing.T) {
	f := &fakeRuntime{listErr: errors.New("connection refused")}
	_, err := Resolver{Runtime: f}.Sandbox(context.Background(), "u1")
	if err == nil || errors.Is(err, ErrNoSandbox) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v, want the runtime's error, not ErrNoSandbox", err)
	}
}

func TestNetNSFromInfo(t *testing.T) {
	cases := []struct {
		name    string
		info    map[string]string
		want    string
		wantErr string
	}{
		{name: "containerd", info: map[string]string{"info": containerdInfo}, want: "/var/run/netns/cni-1234"},
		{name: "cri-o", info: map[string]string{"info": `{"image":"pause","pid":77,"runtimeSpec":{"linux":{"namespaces":[{"type":"network","path":"/var/run/netns/8d5c"}]}}}`}, want: "/var/run/netns/8d5c"},
		{name: "containerd 2, recovered without its spec", info: map[string]string{"info": `{"pid":4242,"sandboxMetadata":{"Version":"v1","Metadata":{"ID":"s1","NetNSPath":"/var/run/netns/cni-5678"}}}`}, want: "/var/run/netns/cni-5678"},
		{name: "spec before metadata", info: map[string]string{"info": `{"runtimeSpec":{"linux":{"namespaces":[{"type":"network","path":"/var/run/netns/cni-1"}]}},"sandboxMetadata":{"Metadata":{"NetNSPath":"/var/run/netns/cni-2"}}}`}, want: "/var/run/netns/cni-1"},
		{name: "pid fallback", info: map[string]string{"info": `{"pid":77,"runtimeSpec":{"linux":{"namespaces":[{"type":"network"}]}}}`}, want: "/proc/77/ns/net"},
		{name: "no spec", info: map[string]string{"info": `{"pid":78}`}, want: "/proc/78/ns/net"},
		{name: "nothing", info: map[string]string{"info": `{}`}, wantErr: "neither"},
		{name: "no info", info: nil, wantErr: `"info"`},
		{name: "garbage", info: map[string]string{"info": `{`}, wantErr: "decode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := NetNSFromInfo(c.info)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestDialRejectsNonUnixEndpoints(t *testing.T) {
	for _, ep := range []string{"", "tcp://1.2.3.4:5", "unix://"} {
		if _, _, err := Dial(ep); err == nil {
			t.Errorf("Dial(%q) succeeded, want an error", ep)
		}
	}
}

func TestPollerTellsOnlyWaitingPodsWithAReadySandbox(t *testing.T) {
	f := &fakeRuntime{items: []*runtimeapi.PodSandbox{
		sandbox("a1", "a", 100, runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("a2", "a", 200, runtimeapi.PodSandboxState_SANDBOX_READY),
		sandbox("b1", "b", 100, runtimeapi.PodSandboxState_SANDBOX_NOTREADY),
		sandbox("c1", "c", 100, runtimeapi.PodSandboxState_SANDBOX_READY),
	}}
	var told []string
	p := &Poller{Runtime: f, Interval: time.Second, Appeared: func(uid string) { told = append(told, uid) }}
	for _, uid := range []string{"a", "b", "d"} {
		p.Wait(uid)
	}
	p.poll(context.Background())
	if !slices.Equal(told, []string{"a"}) {
		t.Fatalf("told %v, want [a] (b's sandbox is not ready, c does not wait, d has none)", told)
	}
	if f.gotState != runtimeapi.PodSandboxState_SANDBOX_READY || len(f.gotLabel) != 0 {
		t.Errorf("list filter state %v labels %v, want READY and no label: one list for the node", f.gotState, f.gotLabel)
	}
	if p.Waiting() != 2 {
		t.Errorf("waiting = %d, want 2 (b and d)", p.Waiting())
	}
	p.Forget("d")
	if p.Waiting() != 1 {
		t.Errorf("waiting after Forget = %d, want 1", p.Waiting())
	}
}

// The runtime is asked at most FewWaiting times per poll whatever the
// number of pods waiting: once per pod for a few, once for the node beyond.
func TestPollerCostDoesNotGrowWithWaitingPods(t *testing.T) {
	for _, n := range []int{1, FewWaiting + 1, 100, 1000} {
		f := &fakeRuntime{}
		for i := range n {
			if i%2 == 0 {
				f.items = append(f.items, sandbox(fmt.Sprint("s", i), fmt.Sprint("u", i), 1, runtimeapi.PodSandboxState_SANDBOX_READY))
			}
		}
		told := 0
		p := &Poller{Runtime: f, Interval: time.Second, Appeared: func(string) { told++ }}
		for i := range n {
			p.Wait(fmt.Sprint("u", i))
		}
		p.poll(context.Background())
		if p.Polls() != 1 || told != (n+1)/2 {
			t.Errorf("%d waiting: %d polls, %d told; want 1 poll, %d told", n, p.Polls(), told, (n+1)/2)
		}
	}
}

// A few waiting pods are looked up each by its UID label, so the answers
// stay small on a node full of sandboxes.
func TestPollerLooksUpFewWaitingPodsByLabel(t *testing.T) {
	f := &fakeRuntime{items: []*runtimeapi.PodSandbox{sandbox("s1", "u1", 1, runtimeapi.PodSandboxState_SANDBOX_READY)}}
	var told []string
	p := &Poller{Runtime: f, Interval: time.Second, Appeared: func(uid string) { told = append(told, uid) }}
	p.Wait("u1")
	p.poll(context.Background())
	if p.Polls() != 1 || f.gotLabel[PodUIDLabel] != "u1" || !slices.Equal(told, []string{"u1"}) {
		t.Fatalf("%d polls with labels %v, told %v; want one list by u1's label telling u1", p.Polls(), f.gotLabel, told)
	}
	for i := range FewWaiting {
		p.Wait(fmt.Sprint("w", i))
	}
	p.poll(context.Background())
	if p.Polls() != 1+FewWaiting || f.gotLabel[PodUIDLabel] == "" {
		t.Fatalf("%d polls, last labels %v; want one list per waiting pod", p.Polls(), f.gotLabel)
	}
}

func TestPollerReportsListFailures(t *testing.T) {
	f := &fakeRuntime{listErr: errors.New("runtime down")}
	var got error
	p := &Poller{Runtime: f, Interval: time.Second, Appeared: func(string) { t.Error("told a pod after a failed list") }, Failed: func(err error) { got = err }}
	p.Wait("a")
	p.poll(context.Background())
	if got == nil || !strings.Contains(got.Error(), "runtime down") || p.Waiting() != 1 {
		t.Fatalf("failure %v, waiting %d; want the runtime's error and the pod still waiting", got, p.Waiting())
	}
}

func TestPollerRefusesANonPositiveInterval(t *testing.T) {
	err := (&Poller{Runtime: &fakeRuntime{}}).Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "interval") {
		t.Fatalf("err = %v, want one naming the interval", err)
	}
}

func TestSandboxIPsPrimaryFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *runtimeapi.PodSandboxNetworkStatus
		want []string
	}{
		{name: "no network status", in: nil, want: nil},
		{name: "host network", in: &runtimeapi.PodSandboxNetworkStatus{}, want: nil},
		{name: "single stack", in: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.244.0.7"}, want: []string{"10.244.0.7"}},
		{name: "dual stack, IPv6 primary", in: &runtimeapi.PodSandboxNetworkStatus{Ip: "fd00::7", AdditionalIps: []*runtimeapi.PodIP{{Ip: "10.244.0.7"}}}, want: []string{"fd00::7", "10.244.0.7"}},
		{name: "empty entries skipped", in: &runtimeapi.PodSandboxNetworkStatus{AdditionalIps: []*runtimeapi.PodIP{{}, nil, {Ip: "10.244.0.8"}}}, want: []string{"10.244.0.8"}},
	} {
		if got := sandboxIPs(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: sandboxIPs = %q, want %q", tc.name, got, tc.want)
		}
	}
}
