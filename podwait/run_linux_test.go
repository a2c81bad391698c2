package podwait

import (
	"bytes"
	"strings"
	"testing"
)

// TestRunRefusesBadFlags: every bad command line exits ExitBadFlags with
// a message naming the flag, before any wait.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--interfaces: at least one"},
		{[]string{"--interfaces", "net1,net1"}, `--interfaces: "net1" listed twice`},
		{[]string{"--interfaces", "a/b"}, `--interfaces: "a/b" is not an interface name`},
		{[]string{"--interfaces", "net1", "--timeout", "0s"}, "--timeout 0s: must be positive"},
		{[]string{"--interfaces", "net1", "--timeout", "soon"}, `invalid value "soon" for flag -timeout`},
		{[]string{"--interfaces", "net1", "extra"}, `unexpected argument "extra"`},
		{[]string{"--interface", "net1"}, "flag provided but not defined: -interface"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run("podnet-wait", c.args, &stdout, &stderr)
		if code != ExitBadFlags || !strings.Contains(stderr.String(), c.want) || stdout.Len() != 0 {
			t.Errorf("Run(%q) = %d, stderr %q, stdout %q; want %d and %q", c.args, code, stderr.String(), stdout.String(), ExitBadFlags, c.want)
		}
	}
}
