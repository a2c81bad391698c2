package version

import (
	_ "embed"
	"fmt"
	"runtime/debug"
	"strings"
)

//go:embed VERSION
var file string

// Version is the release, e.g. "0.1.0", or "0.2.0-dev" for a working tree
// between releases.
var Version = strings.TrimSpace(file)

// Commit is the git commit the binary was built from, with "-dirty" when
// the tree had uncommitted changes, or "" when the build did not record it
// (go run, go test, a build outside a git checkout).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return commitOf(info.Settings)
}

func commitOf(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && dirty {
		rev += "-dirty"
	}
	return rev
}

// String is what `--version` prints: "podnet-agent 0.2.0-dev (commit
// 8875e54…)", without the commit part when it is unknown.
func String(program string) string {
	return format(program, Version, Commit())
}

func format(program, v, commit string) string {
	if commit == "" {
		return fmt.Sprintf("%s %s", program, v)
	}
	return fmt.Sprintf("%s %s (commit %s)", program, v, commit)
}

// Requested reports whether a command line asks only for the version:
// "--version", "-version" or "version" as its only argument. Binaries check
// it before parsing their flags, so that it works the same in each,
// including the CNI plugin, which parses no flags.
func Requested(args []string) bool {
	if len(args) != 1 {
		return false
	}
	switch args[0] {
	case "--version", "-version", "version":
		return true
	}
	return false
}
