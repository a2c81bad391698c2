package bundlefit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Machine is what the machine allows a new container.
type Machine struct {
	// OOMScoreAdj is the lowest oom_score_adj a container may have: the
	// caller's own, as lowering it is not permitted.
	OOMScoreAdj int
	// Hugetlb: a hugetlb cgroup hierarchy is mounted, where runc sets
	// hugepage limits.
	Hugetlb bool
}

// Bundle fits the bundle of a runc create or run call (args are runc's
// arguments) to this machine; other calls are left alone.
func Bundle(args []string) error {
	bundle, ok := bundleOf(args)
	if !ok {
		return nil
	}
	m, err := thisMachine()
	if err != nil {
		return err
	}
	path := filepath.Join(bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read bundle config: %w", err)
	}
	out, changed, err := Fit(b, m)
	if err != nil || !changed {
		return err
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("write bundle config %s: %w", path, err)
	}
	return nil
}

// runcValueFlags are runc's global flags that take a value as the next
// argument (runc --help); its other global flags are booleans.
var runcValueFlags = map[string]bool{"--log": true, "--log-format": true, "--root": true, "--criu": true, "--rootless": true}

// bundleOf finds the bundle folder of a create or run call: --bundle or
// -b, else runc's default, the working folder.
func bundleOf(args []string) (string, bool) {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if runcValueFlags[args[i]] {
			i++
		}
		i++
	}
	if i >= len(args) || (args[i] != "create" && args[i] != "run") {
		return "", false
	}
	bundle := "."
	for j := i + 1; j < len(args); j++ {
		switch a := args[j]; {
		case (a == "--bundle" || a == "-b") && j+1 < len(args):
			bundle = args[j+1]
			j++
		case strings.HasPrefix(a, "--bundle="):
			bundle = strings.TrimPrefix(a, "--bundle=")
		}
	}
	return bundle, true
}

func thisMachine() (Machine, error) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return Machine{}, fmt.Errorf("read own oom_score_adj: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return Machine{}, fmt.Errorf("own oom_score_adj %q: %w", b, err)
	}
	_, err = os.Stat("/sys/fs/cgroup/hugetlb")
	return Machine{OOMScoreAdj: n, Hugetlb: err == nil || isUnified()}, nil
}

// isUnified: on the unified hierarchy (cgroup v2) hugetlb is a
// controller of the one hierarchy, which runc handles itself.
func isUnified() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// Fit returns the OCI config b fitted to m, and whether it changed:
// process.oomScoreAdj raised to at least m.OOMScoreAdj, and
// linux.resources.hugepageLimits dropped without m.Hugetlb. Every other
// field is kept as it was.
func Fit(b []byte, m Machine) ([]byte, bool, error) {
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, false, fmt.Errorf("decode bundle config: %w", err)
	}
	oom, err := edit(spec, "process", func(proc map[string]json.RawMessage) bool {
		var score int
		if raw, ok := proc["oomScoreAdj"]; !ok || json.Unmarshal(raw, &score) != nil || score >= m.OOMScoreAdj {
			return false
		}
		proc["oomScoreAdj"] = json.RawMessage(strconv.Itoa(m.OOMScoreAdj))
		return true
	})
	if err != nil {
		return nil, false, err
	}
	huge, err := edit(spec, "linux", func(linux map[string]json.RawMessage) bool {
		changed, _ := edit(linux, "resources", func(res map[string]json.RawMessage) bool {
			if _, ok := res["hugepageLimits"]; !ok || m.Hugetlb {
				return false
			}
			delete(res, "hugepageLimits")
			return true
		})
		return changed
	})
	if err != nil || !(oom || huge) {
		return b, false, err
	}
	out, err := json.Marshal(spec)
	return out, err == nil, err
}

// edit applies f to the object under key in obj and writes it back when
// f changed it; a missing or non-object value is left alone.
func edit(obj map[string]json.RawMessage, key string, f func(map[string]json.RawMessage) bool) (bool, error) {
	var inner map[string]json.RawMessage
	if raw, ok := obj[key]; !ok || json.Unmarshal(raw, &inner) != nil || inner == nil {
		return false, nil
	}
	if !f(inner) {
		return false, nil
	}
	raw, err := json.Marshal(inner)
	if err != nil {
		return false, fmt.Errorf("encode bundle config %s: %w", key, err)
	}
	obj[key] = raw
	return true, nil
}
