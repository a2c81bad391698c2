package oomclamp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Bundle clamps the bundle of a runc create or run call (args are runc's
// arguments) to the calling process's own oom_score_adj; other calls are
// left alone.
func Bundle(args []string) error {
	bundle, ok := bundleOf(args)
	if !ok {
		return nil
	}
	own, err := ownScore()
	if err != nil {
		return err
	}
	return clampFile(filepath.Join(bundle, "config.json"), own)
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

func ownScore() (int, error) {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0, fmt.Errorf("read own oom_score_adj: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("own oom_score_adj %q: %w", b, err)
	}
	return n, nil
}

// clampFile raises process.oomScoreAdj in the OCI config at path to at
// least min, keeping every other field as it was.
func clampFile(path string, min int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read bundle config: %w", err)
	}
	out, changed, err := Clamp(b, min)
	if err != nil || !changed {
		return err
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("write bundle config %s: %w", path, err)
	}
	return nil
}

// Clamp returns the OCI config b with process.oomScoreAdj raised to at
// least min, and whether it changed; a config without one is unchanged.
func Clamp(b []byte, min int) ([]byte, bool, error) {
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(b, &spec); err != nil {
		return nil, false, fmt.Errorf("decode bundle config: %w", err)
	}
	var proc map[string]json.RawMessage
	if raw, ok := spec["process"]; !ok || json.Unmarshal(raw, &proc) != nil {
		return b, false, nil
	}
	var score int
	if raw, ok := proc["oomScoreAdj"]; !ok || json.Unmarshal(raw, &score) != nil || score >= min {
		return b, false, nil
	}
	proc["oomScoreAdj"] = json.RawMessage(strconv.Itoa(min))
	var err error
	if spec["process"], err = json.Marshal(proc); err != nil {
		return nil, false, err
	}
	out, err := json.Marshal(spec)
	return out, err == nil, err
}
