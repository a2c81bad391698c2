package main

import (
	"strings"
	"testing"
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
