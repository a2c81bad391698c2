package podwait

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Link is what is observed of one interface.
type Link struct {
	Name string
	Up   bool
	// Checking: the agent is still checking its addresses on the wire
	// (its alias ends in wait.CheckingAliasSuffix).
	Checking bool
}

// pending names the wanted interfaces that are absent or down, with why.
func pending(want []string, have map[string]Link) []string {
	var out []string
	for _, name := range want {
		l, ok := have[name]
		switch {
		case !ok:
			out = append(out, name+" (absent)")
		case !l.Up:
			out = append(out, name+" (down)")
		case l.Checking:
			out = append(out, name+" (addresses being checked)")
		}
	}
	return out
}

// ParseInterfaces reads the --interfaces value: a comma-separated list of
// interface names, each a valid Linux interface name, none twice.
func ParseInterfaces(v string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(v, ",") {
		name := strings.TrimSpace(f)
		if name == "" {
			continue
		}
		if len(name) > 15 || strings.ContainsAny(name, "/: \t") || name == "." || name == ".." {
			return nil, fmt.Errorf("--interfaces: %q is not an interface name (at most 15 characters, no '/', ':' or spaces)", name)
		}
		for _, o := range out {
			if o == name {
				return nil, fmt.Errorf("--interfaces: %q listed twice", name)
			}
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, errors.New("--interfaces: at least one interface name is required")
	}
	return out, nil
}

// TimeoutError says what was still missing when the wait gave up.
type TimeoutError struct {
	After   time.Duration
	Pending []string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("podnet interfaces not ready after %s in this pod's network namespace: %s (is podnet-agent running on this node? see the pod's podnet.io/networks-ready condition and events)",
		e.After, strings.Join(e.Pending, ", "))
}
