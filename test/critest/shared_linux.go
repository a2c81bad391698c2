package critest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"podnet.io/podnet/test/testenv"
)

// shared is the one runtime of a test binary whose tests share it.
var shared struct {
	sync.Mutex
	cri   *CRI
	owner *owner
	opts  Options
}

// SharedWith returns the test binary's one runtime started with o,
// started by the first test that asks for it and stopped by StopShared
// (the package's TestMain) when the tests end: starting and stopping one
// costs about 3 s. Every test starts on a runtime without sandboxes:
// those it ran are removed when it ends, as Start's are. A test that
// restarts or kills the runtime, or needs options of its own, starts its
// own with StartWith. Every call of a test binary passes the same o.
func SharedWith(t testing.TB, root string, o Options) *CRI {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.cri == nil {
		own := &owner{TB: t}
		started := false
		// StartWith may fail the test half-way: what it started by then
		// is stopped at once, not left for StopShared.
		defer func() {
			if !started {
				own.stop()
			}
		}()
		c := StartWith(own, root, o)
		started = true
		shared.cri, shared.owner, shared.opts = c, own, o
		own.started()
	} else if !reflect.DeepEqual(o, shared.opts) {
		t.Fatalf("shared runtime: started with options %+v, asked for %+v", shared.opts, o)
	}
	c := shared.cri
	t.Cleanup(func() {
		c.removeAll(t)
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(c.paths.Dir, "runtime.log"))
			t.Logf("%s log (tail):\n%s", c.Kind, testenv.Tail(string(b), 40000))
		}
	})
	return c
}

// StopShared stops the shared runtime, if one was started, after the
// tests: a package whose tests call SharedWith calls it in its TestMain
// after m.Run.
func StopShared() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.owner == nil {
		return nil
	}
	err := shared.owner.stop()
	shared.cri, shared.owner, shared.opts = nil, nil, Options{}
	return err
}

// owner is the testing.TB a shared runtime starts under: until it has
// started it is the test that asked for it (whose Fatal ends that test);
// the cleanups StartWith registers wait for stop, which runs them
// last-first, as a test does, and reports what fails then as an error.
type owner struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	after    bool // started: the test that started it may have ended
	errs     []error
}

func (o *owner) started() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.after = true
}

// Cleanup keeps f for stop.
func (o *owner) Cleanup(f func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cleanups = append(o.cleanups, f)
}

func (o *owner) Errorf(format string, args ...any) {
	o.TB.Helper()
	o.mu.Lock()
	after := o.after
	o.errs = append(o.errs, fmt.Errorf(format, args...))
	o.mu.Unlock()
	if !after {
		o.TB.Errorf(format, args...)
	}
}

func (o *owner) Error(args ...any) { o.Errorf("%s", fmt.Sprint(args...)) }

func (o *owner) Logf(format string, args ...any) {
	o.TB.Helper()
	o.mu.Lock()
	after := o.after
	o.mu.Unlock()
	if after {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
		return
	}
	o.TB.Logf(format, args...)
}

func (o *owner) Failed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.errs) > 0 || (!o.after && o.TB.Failed())
}

// stop runs the cleanups last-first and returns the errors reported
// since the runtime started.
func (o *owner) stop() error {
	o.mu.Lock()
	cleanups := o.cleanups
	o.cleanups = nil
	o.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return errors.Join(o.errs...)
}
