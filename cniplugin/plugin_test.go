package cniplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/containernetworking/cni/pkg/skel"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cnisocket"
)

const prevResult = `{"cniVersion":"1.0.0","interfaces":[{"name":"eth0","sandbox":"/var/run/netns/cni-1"}],"ips":[{"address":"10.1.0.5/24","interface":0}]}`

func stdin(t *testing.T, extra string) []byte {
	t.Helper()
	s := `{"cniVersion":"1.0.0","name":"pn","type":"podnet","socket":"/tmp/x.sock","prevResult":` + prevResult + extra + `}`
	if !json.Valid([]byte(s)) {
		t.Fatalf("invalid test config %s", s)
	}
	return []byte(s)
}

func annotations(approved bool) string {
	a := map[string]string{"other": "x"}
	if approved {
		a[v1alpha1.ApprovedAnnotation] = `{"interfaces":[]}`
	}
	b, _ := json.Marshal(map[string]any{PodAnnotationsCapability: a})
	return `,"runtimeConfig":` + string(b)
}

const cniArgs = "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=pod1;K8S_POD_INFRA_CONTAINER_ID=sb1;K8S_POD_UID=uid-1"

// TestAddAsksTheAgentOnlyForApprovedPods: a plain pod passes through
// without a call, an approved one calls with the pod, UID, sandbox and
// netns, and both print the previous result unchanged.
func TestAddAsksTheAgentOnlyForApprovedPods(t *testing.T) {
	for _, approved := range []bool{false, true} {
		var calls []cnisocket.Request
		var sockets []string
		var out bytes.Buffer
		p := Plugin{Out: &out, Call: func(_ context.Context, socket string, req cnisocket.Request) error {
			calls, sockets = append(calls, req), append(sockets, socket)
			return nil
		}}
		err := p.Add(&skel.CmdArgs{ContainerID: "sb1", Netns: "/var/run/netns/cni-1", IfName: "eth0", Args: cniArgs, StdinData: stdin(t, annotations(approved))})
		if err != nil {
			t.Fatalf("approved=%v: %v", approved, err)
		}
		want := 0
		if approved {
			want = 1
		}
		if len(calls) != want {
			t.Fatalf("approved=%v: %d calls to the agent, want %d", approved, len(calls), want)
		}
		if approved {
			wantReq := cnisocket.Request{Namespace: "ns1", Name: "pod1", UID: "uid-1", SandboxID: "sb1", NetNS: "/var/run/netns/cni-1", IPs: []string{"10.1.0.5"}}
			if !reflect.DeepEqual(calls[0], wantReq) || sockets[0] != "/tmp/x.sock" {
				t.Errorf("call = %+v on %q, want %+v on /tmp/x.sock", calls[0], sockets[0], wantReq)
			}
		}
		var got, exp map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		json.Unmarshal([]byte(prevResult), &exp)
		if g, e := mustJSON(got["ips"]), mustJSON(exp["ips"]); g != e {
			t.Errorf("approved=%v: printed ips %s, want prevResult's %s", approved, g, e)
		}
	}
}

// TestPodIPsAreTheRuntimes: the addresses of the sandbox's eth0 only,
// the first IPv4 first, as containerd reports the pod's IPs.
func TestPodIPsAreTheRuntimes(t *testing.T) {
	prev := `{"cniVersion":"1.0.0","interfaces":[{"name":"cni0"},{"name":"eth0","sandbox":"/n"},{"name":"net9","sandbox":"/n"}],"ips":[` +
		`{"address":"10.0.0.1/24","interface":0},{"address":"fd00::5/64","interface":1},{"address":"10.1.0.5/24","interface":1},` +
		`{"address":"10.9.0.5/24","interface":2},{"address":"10.2.0.5/24"},{"address":"10.3.0.5/24","interface":7}]}`
	var out bytes.Buffer
	var got cnisocket.Request
	p := Plugin{Out: &out, Call: func(_ context.Context, _ string, req cnisocket.Request) error { got = req; return nil }}
	in := strings.Replace(string(stdin(t, annotations(true))), prevResult, prev, 1)
	if err := p.Add(&skel.CmdArgs{ContainerID: "sb1", Netns: "/n", IfName: "eth0", Args: cniArgs, StdinData: []byte(in)}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.1.0.5", "fd00::5"}; !slices.Equal(got.IPs, want) {
		t.Errorf("IPs = %q, want %q", got.IPs, want)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestAddFailsWithTheAgentsReason: the sandbox fails, naming the reason,
// and nothing is printed.
func TestAddFailsWithTheAgentsReason(t *testing.T) {
	var out bytes.Buffer
	p := Plugin{Out: &out, Call: func(context.Context, string, cnisocket.Request) error {
		return errors.New("pod ns1/pod1: approval refused: bad signature")
	}}
	err := p.Add(&skel.CmdArgs{ContainerID: "sb1", Netns: "/n", Args: cniArgs, StdinData: stdin(t, annotations(true))})
	if err == nil || !strings.Contains(err.Error(), "bad signature") || !strings.Contains(err.Error(), "ns1/pod1") {
		t.Fatalf("err = %v, want the agent's reason naming the pod", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q on failure", out.String())
	}
}

// TestAddRefusesBadInput: each bad input names the field.
func TestAddRefusesBadInput(t *testing.T) {
	noPrev := []byte(`{"cniVersion":"1.0.0","name":"pn","type":"podnet"}`)
	for name, tc := range map[string]struct {
		args skel.CmdArgs
		want string
	}{
		"no prevResult":   {skel.CmdArgs{StdinData: noPrev}, "chained plugin"},
		"bad timeout":     {skel.CmdArgs{StdinData: stdin(t, `,"timeout":"forever"`)}, `timeout "forever"`},
		"timeout too big": {skel.CmdArgs{StdinData: stdin(t, `,"timeout":"1h"`)}, "at most 3m0s"},
		"not json":        {skel.CmdArgs{StdinData: []byte("{")}, "parse network configuration"},
		"no pod name":     {skel.CmdArgs{ContainerID: "sb1", Netns: "/n", Args: "K8S_POD_NAMESPACE=ns1", StdinData: stdin(t, annotations(true))}, "name: must not be empty"},
	} {
		p := Plugin{Out: &bytes.Buffer{}, Call: func(context.Context, string, cnisocket.Request) error { return nil }}
		args := tc.args
		err := p.Add(&args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, tc.want)
		}
	}
}

// TestInstallReplacesInPlace: the binary lands as "podnet", executable,
// with the source's bytes, also over an older copy.
func TestInstallReplacesInPlace(t *testing.T) {
	dir := t.TempDir()
	src := dir + "/src"
	for _, content := range []string{"old", "new binary"} {
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Install(src, dir); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dir + "/" + Type)
		if err != nil || string(got) != content {
			t.Fatalf("installed %q (%v), want %q", got, err, content)
		}
		if st, _ := os.Stat(dir + "/" + Type); st.Mode().Perm() != 0o755 {
			t.Errorf("mode %v, want 0755", st.Mode().Perm())
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("folder holds %d entries, want src and %s only", len(ents), Type)
	}
	if err := Install(dir+"/missing", dir); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing source: err = %v", err)
	}
}
