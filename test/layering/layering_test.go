package layering

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "podnet.io/podnet"

// rule forbids packages under from (module-relative) to depend, directly or
// not, on any package whose path starts with one of forbidden.
type rule struct {
	from      string
	forbidden []string
	why       string
}

var rules = []rule{
	{"api/", []string{module + "/", "k8s.io/client-go", "sigs.k8s.io/controller-runtime"},
		"the API types import apimachinery only, so anyone can vendor them"},
	{"pkg/", []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"},
	{"webhook", []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"},
	{"agent", []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"},
	{"controller", []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"},
	{"certs", []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"},
	{"plugin", []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"},
	{"hack/", []string{module + "/test"}, "tooling never imports tests"},
	{"pkg/dataplane", []string{module + "/api"}, "the dataplane plans links, not API objects: translation happens in the agent"},
	{"agent/podwait", smallWaitForbidden, smallWaitWhy},
	{"agent/cmd/podnet-wait", smallWaitForbidden, smallWaitWhy},
}

// smallWaitForbidden keeps the wait init container, which runs in every
// podnet pod, to the standard library and x/sys: a netlink, gRPC or
// Kubernetes library would multiply its binary and the memory it maps.
var smallWaitForbidden = []string{"k8s.io/", "sigs.k8s.io/", "github.com/", "google.golang.org/", "podnet.io/podnet/api", "podnet.io/podnet/pkg"}

// exempt are packages a rule's from may depend on although forbidden
// names them (exact import paths). podnet-wait reports its release like
// every binary: pkg/version imports only the standard library, and
// whatever it imported would be checked as one of podnet-wait's own
// dependencies.
var exempt = map[string][]string{
	"agent/cmd/podnet-wait": {module + "/pkg/version"},
}

const smallWaitWhy = "podnet-wait links only the standard library, x/sys and agent/podwait, so its image stays small"

// TestImportLayering runs `go list -deps` over the whole module (test files
// excluded: a test may import any helper) and fails on every forbidden edge.
func TestImportLayering(t *testing.T) {
	deps := moduleDeps(t)
	if len(deps) < 10 {
		t.Fatalf("go list found only %d packages: the check would prove nothing", len(deps))
	}
	checked := map[string]bool{}
	for pkg, list := range deps {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		for _, r := range rules {
			if !strings.HasPrefix(rel, r.from) {
				continue
			}
			checked[r.from] = true
			for _, d := range list {
				if slices.Contains(exempt[r.from], d) {
					continue
				}
				for _, f := range r.forbidden {
					if strings.HasPrefix(d, f) {
						t.Errorf("%s depends on %s: %s", pkg, d, r.why)
					}
				}
			}
		}
	}
	for _, must := range []string{"api/", "pkg/", "webhook", "agent", "controller", "certs", "plugin", "hack/", "pkg/dataplane", "agent/podwait", "agent/cmd/podnet-wait"} {
		if !checked[must] {
			t.Errorf("no package matched %q: the rule checks nothing", must)
		}
	}
}

// moduleDeps maps every package of the module to its transitive imports.
func moduleDeps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 0 {
			deps[fields[0]] = fields[1:]
		}
	}
	return deps
}
