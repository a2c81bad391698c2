package main

import (
	"strings"
	"testing"
	"time"
)

func TestDaemonSetFlag(t *testing.T) {
	if key, err := daemonSetKey(""); key != nil || err != nil {
		t.Fatalf("empty: %v, %v; want not watched", key, err)
	}
	if key, err := daemonSetKey("podnet-system/podnet-agent"); err != nil || key.Namespace != "podnet-system" || key.Name != "podnet-agent" {
		t.Fatalf("namespace/name: %v, %v", key, err)
	}
	for _, bad := range []string{"podnet-agent", "/podnet-agent", "podnet-system/", "a/b/c"} {
		if _, err := daemonSetKey(bad); err == nil || !strings.Contains(err.Error(), "--daemonset "+`"`+bad+`": must be namespace/name`) {
			t.Errorf("%q: %v, want an error naming the flag", bad, err)
		}
	}
}

func TestNRIFlags(t *testing.T) {
	good := flags{nodeName: "n1", resync: time.Minute, qps: 20, burst: 30, multusStatus: "auto", clusterNetwork: "default",
		concurrency: 4, sandboxPoll: 50 * time.Millisecond, nriCreateWait: 1500 * time.Millisecond, nriHookTimeout: time.Minute}
	if err := validateFlags(good); err != nil {
		t.Fatalf("NRI off: %v", err)
	}
	on := good
	on.nriSocket = "/var/run/nri/nri.sock"
	if err := validateFlags(on); err != nil {
		t.Fatalf("NRI on: %v", err)
	}
	for _, tc := range []struct {
		mod  func(*flags)
		want string
	}{
		{func(f *flags) { f.nriSocket = "nri.sock" }, `--nri-socket "nri.sock": must be an absolute path`},
		{func(f *flags) { f.nriCreateWait = 2 * time.Second }, "--nri-create-wait 2s: must be between"},
		{func(f *flags) { f.nriCreateWait = -time.Second }, "--nri-create-wait -1s: must be between"},
		{func(f *flags) { f.nriHook = "podnet-wait" }, `--nri-hook "podnet-wait": must be an absolute path, with --nri-socket`},
		{func(f *flags) { f.nriHook, f.nriSocket = "/opt/podnet/bin/podnet-wait", "" }, `--nri-hook "/opt/podnet/bin/podnet-wait": must be an absolute path, with --nri-socket`},
		{func(f *flags) { f.nriHookTimeout = 3 * time.Minute }, "--nri-hook-timeout 3m0s: must be between 1s and 1m40s"},
	} {
		f := on
		tc.mod(&f)
		if err := validateFlags(f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func TestDRAFlag(t *testing.T) {
	f := flags{nodeName: "n1", resync: time.Minute, qps: 20, burst: 30, multusStatus: "auto", clusterNetwork: "default",
		concurrency: 4, sandboxPoll: 50 * time.Millisecond, nriCreateWait: 1500 * time.Millisecond, nriHookTimeout: time.Minute, draKubeletDir: "/var/lib/kubelet"}
	if err := validateFlags(f); err != nil {
		t.Fatalf("DRA on: %v", err)
	}
	f.draKubeletDir = "var/lib/kubelet"
	if err := validateFlags(f); err == nil || !strings.Contains(err.Error(), `--dra-kubelet-dir "var/lib/kubelet": must be an absolute path`) {
		t.Errorf("error %v, want the relative kubelet dir refused", err)
	}
}
