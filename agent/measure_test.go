package agent

import "testing"

func TestMeasureAttach(t *testing.T) {
	for _, c := range []struct {
		name                  string
		measured, sandbox     string
		ready, wasAttached    bool
		wantObserve, wantDone bool
	}{
		{name: "first attach", sandbox: "s1", ready: true, wantObserve: true, wantDone: true},
		{name: "not ready yet", sandbox: "s1"},
		{name: "resync of a measured sandbox", measured: "s1", sandbox: "s1", ready: true, wasAttached: true},
		{name: "adopted after a restart", sandbox: "s1", ready: true, wasAttached: true, wantDone: true},
		{name: "new sandbox of a measured pod", measured: "s1", sandbox: "s2", ready: true, wasAttached: true, wantObserve: true, wantDone: true},
		{name: "adopted but failing", sandbox: "s1", wasAttached: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			observe, done := measureAttach(c.measured, c.sandbox, c.ready, c.wasAttached)
			if observe != c.wantObserve || done != c.wantDone {
				t.Errorf("measureAttach(%q, %q, %v, %v) = %v, %v; want %v, %v",
					c.measured, c.sandbox, c.ready, c.wasAttached, observe, done, c.wantObserve, c.wantDone)
			}
		})
	}
}
