package podwait

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPending(t *testing.T) {
	have := map[string]Link{"net1": {Name: "net1", Up: true}, "net2": {Name: "net2"}, "net4": {Name: "net4", Up: true, Checking: true}}
	got := pending([]string{"net1", "net2", "net3", "net4"}, have)
	want := []string{"net2 (down)", "net3 (absent)", "net4 (addresses being checked)"}
	if !slices.Equal(got, want) {
		t.Fatalf("pending = %v, want %v", got, want)
	}
	if got := pending([]string{"net1"}, have); got != nil {
		t.Fatalf("pending = %v, want nothing", got)
	}
}

func TestParseInterfaces(t *testing.T) {
	got, err := ParseInterfaces("net1, net2,")
	if err != nil || !slices.Equal(got, []string{"net1", "net2"}) {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", ",", "net1,net1", "a/b", "sixteen-chars-xx"} {
		if _, err := ParseInterfaces(bad); err == nil || !strings.Contains(err.Error(), "--interfaces") {
			t.Errorf("ParseInterfaces(%q) err = %v, want an error naming --interfaces", bad, err)
		}
	}
}

func TestTimeoutMessageNamesWhatIsMissing(t *testing.T) {
	msg := (&TimeoutError{After: 5 * time.Minute, Pending: []string{"net2 (absent)"}}).Error()
	for _, want := range []string{"5m0s", "net2 (absent)", "podnet.io/networks-ready"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not contain %q", msg, want)
		}
	}
}
