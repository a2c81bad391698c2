package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/cri"
)

// TestJudgeSandboxNetNS: a request's netns must be the one the runtime
// made for that sandbox of that pod, and never the node's or the agent's.
func TestJudgeSandboxNetNS(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	req := cnisocket.Request{Namespace: "ns", Name: "p", UID: "u1", SandboxID: "sb1", NetNS: "/var/run/netns/cni-1"}
	sandbox, node, other := nsIdentity{1, 10}, nsIdentity{1, 20}, nsIdentity{1, 30}
	forbidden := map[nsIdentity]string{node: "the node's (--host-netns)"}
	rec := cri.SandboxRecord{PodUID: "u1", NetNS: "/run/netns/cni-1"}
	for name, c := range map[string]struct {
		got, recorded nsIdentity
		rec           cri.SandboxRecord
		want          string
	}{
		"the sandbox's own, by another path": {sandbox, sandbox, rec, ""},
		"the node's":                         {node, node, rec, `netns "/var/run/netns/cni-1": is the node's (--host-netns) network namespace, never a pod's`},
		"another pod's sandbox":              {sandbox, sandbox, cri.SandboxRecord{PodUID: "u2", NetNS: rec.NetNS}, `sandbox "sb1": the runtime made it for pod uid "u2", not "u1"`},
		"not the sandbox's":                  {other, sandbox, rec, `netns "/var/run/netns/cni-1": not the network namespace the runtime made for sandbox "sb1" ("/run/netns/cni-1")`},
	} {
		err := judgeSandboxNetNS(pod, req, c.got, forbidden, c.rec, c.recorded)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "pod ns/p")):
			t.Errorf("%s: err = %v, want it to name pod ns/p and contain %q", name, err, c.want)
		}
	}
}

// TestNetNSIdentity: a namespace file has an identity, the same through
// every path to it; anything else is refused.
func TestNetNSIdentity(t *testing.T) {
	self, err := netnsIdentity("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	again, err := netnsIdentity("/proc/" + strconv.Itoa(os.Getpid()) + "/ns/net")
	if err != nil || again != self {
		t.Fatalf("the same namespace by pid: %v, %v; want %v", again, err, self)
	}
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{file: "not a namespace file", "/proc/self/ns/none": "statfs", "/nonexistent": "statfs"} {
		if _, err := netnsIdentity(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to contain %q", path, err, want)
		}
	}
}

// TestSandboxNetNSPath: a request naming no netns attaches into the one
// the runtime recorded; one naming a netns keeps it (and is checked
// against the record).
func TestSandboxNetNSPath(t *testing.T) {
	if got := sandboxNetNSPath("", "/run/netns/cni-1"); got != "/run/netns/cni-1" {
		t.Errorf("no netns requested: %q, want the record's", got)
	}
	if got := sandboxNetNSPath("/proc/42/ns/net", "/run/netns/cni-1"); got != "/proc/42/ns/net" {
		t.Errorf("netns requested: %q, want the request's", got)
	}
}

// recordsFunc is a Records from a function.
type recordsFunc func(id string) (cri.SandboxRecord, error)

func (f recordsFunc) SandboxByID(_ context.Context, id string) (cri.SandboxRecord, error) {
	return f(id)
}

// TestCheckSandboxNetNSTakesTheRuntimesOwnRecord: a request the runtime
// sent itself (NRI) is judged against the record it brought, without a CRI
// round trip, and still never attaches into the agent's own namespace; a
// request from the CNI socket is judged against what the runtime answers.
func TestCheckSandboxNetNSTakesTheRuntimesOwnRecord(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}}
	req := cnisocket.Request{Namespace: "ns", Name: "p", UID: "u1", SandboxID: "sb1", NetNS: "/proc/self/ns/net"}
	asked := 0
	s := &Handshake{Records: recordsFunc(func(string) (cri.SandboxRecord, error) {
		asked++
		return cri.SandboxRecord{}, errors.New("the runtime is busy")
	})}
	_, err := s.checkSandboxNetNS(context.Background(), pod, req, &cri.SandboxRecord{PodUID: "u1", NetNS: req.NetNS})
	if err == nil || !strings.Contains(err.Error(), "the agent's own") || asked != 0 {
		t.Fatalf("with the runtime's record: err = %v after %d CRI lookups; want the agent's own netns refused, no lookup", err, asked)
	}
	_, err = s.checkSandboxNetNS(context.Background(), pod, req, nil)
	if err == nil || !strings.Contains(err.Error(), "the runtime is busy") || asked != 1 {
		t.Fatalf("without it: err = %v after %d CRI lookups; want the lookup's error after one", err, asked)
	}
}

// TestStartFromRuntimeBringsTheRecord: NRI's request carries the runtime's
// record only when it names a netns; one naming none is looked up.
func TestStartFromRuntimeBringsTheRecord(t *testing.T) {
	for netns, want := range map[string]bool{"/var/run/netns/cni-1": true, "": false} {
		rec := runtimeRecord(cnisocket.Request{UID: "u1", NetNS: netns})
		if (rec != nil) != want || (rec != nil && (rec.PodUID != "u1" || rec.NetNS != netns)) {
			t.Errorf("netns %q: record %+v, want one: %v", netns, rec, want)
		}
	}
}
