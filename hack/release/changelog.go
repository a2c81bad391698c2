package release

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// Release is one released version and the commit it was made from.
type Release struct {
	Version string
	Commit  string
}

var (
	// heading is a release's heading: "## 0.1.0 — 2026-11-24".
	heading = regexp.MustCompile(`^## +v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\b`)
	// fullCommit is a full commit hash in backticks; a short one could
	// become ambiguous as history grows.
	fullCommit = regexp.MustCompile("`([0-9a-f]{40})`")
)

// Releases lists the releases of a changelog, newest first (in the order
// written). "## Unreleased" and other headings are not releases. A release
// must name its commit as a full hash in backticks in its section.
func Releases(changelog string) ([]Release, error) {
	var out []Release
	var cur *Release
	flush := func() error {
		if cur == nil {
			return nil
		}
		if cur.Commit == "" {
			return fmt.Errorf("CHANGELOG.md: release %s names no commit: write its full 40-digit hash in backticks in its section", cur.Version)
		}
		out = append(out, *cur)
		cur = nil
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(changelog))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			if err := flush(); err != nil {
				return nil, err
			}
			if m := heading.FindStringSubmatch(line); m != nil {
				cur = &Release{Version: m[1]}
			}
			continue
		}
		if cur != nil && cur.Commit == "" {
			if m := fullCommit.FindStringSubmatch(line); m != nil {
				cur.Commit = m[1]
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// Previous is the newest release of a changelog: the one the working tree
// must upgrade from.
func Previous(changelog string) (Release, error) {
	rs, err := Releases(changelog)
	if err != nil {
		return Release{}, err
	}
	if len(rs) == 0 {
		return Release{}, fmt.Errorf("CHANGELOG.md names no release (a heading such as \"## 0.1.0 — 2026-11-24\")")
	}
	return rs[0], nil
}
