package main

import (
	"strings"
	"testing"
	"time"
)

func TestUninstallFlagsNameWhatIsWrong(t *testing.T) {
	ok := uninstallFlags{namespace: "podnet-system", daemonSet: "podnet-agent", timeout: 5 * time.Minute}
	if err := validateUninstallFlags(ok); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, tc := range []struct {
		change func(*uninstallFlags)
		want   string
	}{
		{func(f *uninstallFlags) { f.namespace = "" }, "--namespace: must not be empty"},
		{func(f *uninstallFlags) { f.daemonSet = "" }, "--daemonset: must not be empty"},
		{func(f *uninstallFlags) { f.timeout = 0 }, "--timeout 0s: must be between 1s and 1h"},
		{func(f *uninstallFlags) { f.timeout = 2 * time.Hour }, "--timeout 2h0m0s: must be between 1s and 1h"},
	} {
		f := ok
		tc.change(&f)
		if err := validateUninstallFlags(f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one containing %q", err, tc.want)
		}
	}
	if code := runUninstall([]string{"--timeout", "nonsense"}); code != 2 {
		t.Errorf("a malformed flag exits %d, want 2", code)
	}
}
