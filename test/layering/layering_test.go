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
// not, on any package whose path starts with one of forbidden; a
// forbidden path ending in "$" names that one package only, not those
// below it.
type rule struct {
	from      string
	forbidden []string
	why       string
}

// components are the rooms of podnet's programs, each run with its own
// privilege: the node agent (root on every node), the webhook and the
// controller (API credentials), the kubectl plugin (the user's), the CNI
// plugin (run by the container runtime) and the wait init container (in
// every podnet pod). cmd/ composes them into binaries.
var components = []string{"agent", "webhook", "controller", "kubectlpodnet", "cniplugin", "podwait"}

// productRooms is every room of product code: the components, the libraries
// they share and the binaries.
var productRooms = append([]string{"api/", "pkg/", "cmd/", "cnisocket"}, components...)

// smallWaitForbidden keeps the wait init container, which runs in every
// podnet pod, to the standard library and x/sys: a netlink, gRPC or
// Kubernetes library would multiply its binary and the memory it maps.
var smallWaitForbidden = []string{"k8s.io/", "sigs.k8s.io/", "github.com/", "google.golang.org/", module + "/api/v1alpha1", module + "/pkg"}

const smallWaitWhy = "podnet-wait links only the standard library, x/sys, podwait and api/wait, so its image stays small"

// cliForbidden keeps the kubectl plugin a small client of the API server:
// it reads objects and calls pkg/policy, never a node's kernel or runtime.
var cliForbidden = []string{"github.com/vishvananda/netlink", "github.com/mdlayher/netlink", "k8s.io/cri-api", "google.golang.org/grpc", "github.com/google/nftables"}

// agentRooms are the rooms beside the agent's reconcile, each a way of
// holding or attaching a pod or a node job. Each is seen by the reconcile
// through a small interface of the agent's own, and stands on
// agent/podstate only: a room that imported another, or the reconcile,
// would tie two optional parts together again.
var agentRooms = []string{"agent/sandbox", "agent/dra", "agent/nodehold", "agent/uninstall", "agent/nri", "agent/nodecarry", "agent/peers"}

// controllerRooms are podnet-controller's reconcilers that stand apart,
// each set up by the controller's Setup, on the caches of
// controller/infocache only.
var controllerRooms = []string{"controller/claimgc", "controller/profilestatus", "controller/deviceclasses", "controller/resourceclaims", "controller/holdchoice"}

func rules() []rule {
	rs := []rule{
		{"api/", []string{module + "/", "k8s.io/client-go", "sigs.k8s.io/controller-runtime"},
			"the API types import apimachinery only, so anyone can vendor them"},
		{"hack/", []string{module + "/test"}, "tooling never imports tests"},
		{"pkg/dataplane", []string{module + "/api/v1alpha1"}, "the dataplane plans links, not API objects: translation happens in the agent (api/wait, constants the wait container reads, it shares)"},
		{"pkg/policy", []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}, "policy decisions are pure functions of objects, not of a client"},
		{"pkg/approval", []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}, "approvals are signed and verified without a client"},
		{"pkg/hold", []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}, "the hold modes' table is pure decisions the webhook and the agent share"},
		{"pkg/ipam/rules", []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime"}, "the address rules admission and allocation share are pure functions"},
		{"podwait", smallWaitForbidden, smallWaitWhy},
		{"cmd/podnet-wait", smallWaitForbidden, smallWaitWhy},
		{"kubectlpodnet", cliForbidden, "the kubectl plugin runs on the user's machine and links no netlink, CRI or gRPC"},
		{"cmd/kubectl-podnet", cliForbidden, "the kubectl plugin runs on the user's machine and links no netlink, CRI or gRPC"},
		{"pkg/", componentPaths(""), "pkg/ holds libraries the components share; it never imports a component"},
		{"cnisocket", componentPaths(""), "the socket between the agent and the CNI plugin belongs to neither"},
	}
	for _, room := range productRooms {
		rs = append(rs, rule{room, []string{module + "/hack", module + "/test"}, "product code never imports tooling or tests"})
	}
	for _, c := range components {
		rs = append(rs, rule{c, componentPaths(c), "components never import each other: each runs with its own privilege and links only what it needs"})
	}
	rs = append(rs, rule{"agent/podstate", []string{module + "/agent$", module + "/agent/"},
		"the agent's vocabulary is the floor its rooms stand on: it imports none of them"})
	for _, room := range agentRooms {
		forbidden := []string{module + "/agent$"}
		for _, other := range agentRooms {
			if other != room {
				forbidden = append(forbidden, module+"/"+other)
			}
		}
		rs = append(rs, rule{room, forbidden, "the agent's rooms never import each other or the reconcile: each plugs in through an interface the reconcile owns"})
	}
	rs = append(rs, rule{"controller/infocache", []string{module + "/controller$", module + "/controller/"},
		"the controller's caches are the floor its reconcilers stand on: they import none of them"})
	for _, room := range controllerRooms {
		forbidden := []string{module + "/controller$"}
		for _, other := range controllerRooms {
			if other != room {
				forbidden = append(forbidden, module+"/"+other)
			}
		}
		rs = append(rs, rule{room, forbidden, "the controller's reconcilers never import each other or the controller's setup"})
	}
	return rs
}

// exempt are packages a rule's from may depend on although forbidden
// names them (exact import paths). podnet-wait reports its release like
// every binary: pkg/version imports only the standard library, and
// whatever it imported would be checked as one of podnet-wait's own
// dependencies.
var exempt = map[string][]string{
	"cmd/podnet-wait": {module + "/pkg/version"},
}

// componentPaths returns the import paths of every component but except.
func componentPaths(except string) []string {
	var out []string
	for _, c := range components {
		if c != except {
			out = append(out, module+"/"+c)
		}
	}
	return out
}

// TestImportLayering runs `go list -deps` over the whole module (test files
// excluded: a test may import any helper) and fails on every forbidden edge.
func TestImportLayering(t *testing.T) {
	deps := moduleDeps(t)
	if len(deps) < 10 {
		t.Fatalf("go list found only %d packages: the check would prove nothing", len(deps))
	}
	checked := map[string]bool{}
	all := rules()
	for pkg, list := range deps {
		rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
		for _, r := range all {
			if !under(rel, r.from) {
				continue
			}
			checked[r.from] = true
			for _, d := range list {
				if slices.Contains(exempt[r.from], d) {
					continue
				}
				for _, f := range r.forbidden {
					if forbids(f, d) {
						t.Errorf("%s depends on %s: %s", pkg, d, r.why)
					}
				}
			}
		}
	}
	for _, r := range all {
		if !checked[r.from] {
			t.Errorf("no package matched %q: the rule checks nothing", r.from)
		}
	}
}

// forbids reports whether the forbidden path f names package d: d itself
// when f ends in "$", else d or a package below it.
func forbids(f, d string) bool {
	if exact, ok := strings.CutSuffix(f, "$"); ok {
		return d == exact
	}
	return under(d, f)
}

// under reports whether the package path lies in room: the room itself or
// a package below it ("agent" holds agent/peers, not agentx).
func under(path, room string) bool {
	room = strings.TrimSuffix(room, "/")
	return path == room || strings.HasPrefix(path, room+"/")
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
