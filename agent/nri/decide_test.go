package nri

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"

	"podnet.io/podnet/api/v1alpha1"
)

func sandbox(annotations map[string]string, netns string) *api.PodSandbox {
	pod := &api.PodSandbox{Id: "sb1", Name: "web", Namespace: "tenant", Uid: "u1", Annotations: annotations, Ips: []string{"10.0.0.5"}}
	if netns != "" {
		pod.Linux = &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "ipc", Path: "/proc/1/ns/ipc"}, {Type: "network", Path: netns}}}
	}
	return pod
}

func TestIsPodnetPod(t *testing.T) {
	for _, tc := range []struct {
		name string
		ann  map[string]string
		want bool
	}{
		{"approved", map[string]string{v1alpha1.ApprovedAnnotation: "payload"}, true},
		{"approved and asking", map[string]string{v1alpha1.NetworksAnnotation: "data", v1alpha1.ApprovedAnnotation: "payload"}, true},
		{"asks without approval", map[string]string{v1alpha1.NetworksAnnotation: "data"}, false},
		{"empty approval", map[string]string{v1alpha1.ApprovedAnnotation: ""}, false},
		{"plain", nil, false},
	} {
		if got := isPodnetPod(sandbox(tc.ann, "/run/netns/x")); got != tc.want {
			t.Errorf("%s: isPodnetPod = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRequestFromSandbox(t *testing.T) {
	req := request(sandbox(nil, "/var/run/netns/cni-1"))
	if req.Namespace != "tenant" || req.Name != "web" || req.UID != "u1" || req.SandboxID != "sb1" || req.NetNS != "/var/run/netns/cni-1" || !slices.Equal(req.IPs, []string{"10.0.0.5"}) {
		t.Errorf("request = %+v", req)
	}
	if got := netNSPath(sandbox(nil, "")); got != "" {
		t.Errorf("netns of a pod without a network namespace = %q, want empty", got)
	}
}

func TestMissingInterfaces(t *testing.T) {
	present := map[string]bool{"lo": true, "eth0": true, "net2": true}
	if got := missingInterfaces([]string{"net1", "net2", "net3"}, present); !slices.Equal(got, []string{"net1", "net3"}) {
		t.Errorf("missing = %v, want [net1 net3]", got)
	}
	if got := missingInterfaces([]string{"net2"}, present); len(got) != 0 {
		t.Errorf("missing = %v, want none", got)
	}
	if got := missingInterfaces(nil, present); len(got) != 0 {
		t.Errorf("missing of an approval without interfaces = %v, want none", got)
	}
}

func TestRefusalText(t *testing.T) {
	pod := sandbox(nil, "/var/run/netns/cni-1")
	why := errors.New("IPAM failed")
	err := refusal(pod, "app", []string{"net1", "net3"}, why)
	for _, want := range []string{`pod tenant/web container "app"`, "podnet networks not ready", "net1, net3", `"/var/run/netns/cni-1"`, "IPAM failed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if !errors.Is(err, why) {
		t.Errorf("refusal %v does not wrap its cause", err)
	}
	if err := refusal(pod, "app", nil, nil); !errors.Is(err, errNotReady) || strings.Contains(err.Error(), "missing") {
		t.Errorf("refusal without missing interfaces = %v", err)
	}
}

func TestValidateCreateWait(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, DefaultCreateWait, MaxCreateWait} {
		if err := ValidateCreateWait(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	for _, d := range []time.Duration{-time.Second, 2 * time.Second, time.Minute} {
		err := ValidateCreateWait(d)
		if err == nil || !strings.Contains(err.Error(), "--nri-create-wait") {
			t.Errorf("%s: error %v, want one naming --nri-create-wait", d, err)
		}
	}
}

// TestNetNSPath: NRI's netns, else none (the agent then takes the
// runtime's CRI record), never a path made from the sandbox's pid, which
// names another process in the agent's PID namespace.
func TestNetNSPath(t *testing.T) {
	named := sandbox(approved, "/var/run/netns/cni-1")
	named.Pid = 42
	noSpec := sandbox(approved, "")
	noSpec.Pid = 42
	emptyPath := sandbox(approved, "")
	emptyPath.Linux = &api.LinuxPodSandbox{Namespaces: []*api.LinuxNamespace{{Type: "network"}}}
	emptyPath.Pid = 7
	for name, c := range map[string]struct {
		pod  *api.PodSandbox
		want string
	}{
		"named by NRI":         {named, "/var/run/netns/cni-1"},
		"no namespaces, a pid": {noSpec, ""},
		"empty path, a pid":    {emptyPath, ""},
		"nothing":              {sandbox(approved, ""), ""},
	} {
		if got := netNSPath(c.pod); got != c.want {
			t.Errorf("%s: netNSPath = %q, want %q", name, got, c.want)
		}
	}
}
