package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"podnet.io/podnet/pkg/version"
)

var sample = "# Changelog\n\n## Unreleased (0.3.0)\n\n- next\n\n" +
	"## 0.2.0 — 2027-01-10\n\nCommit `" + strings.Repeat("b", 40) + "`.\n\n" +
	"## 0.1.0 — 2026-11-24\n\nFirst release, commit `" + strings.Repeat("a", 40) + "`.\n"

func TestReleases(t *testing.T) {
	rs, err := Releases(sample)
	if err != nil {
		t.Fatal(err)
	}
	want := []Release{{"0.2.0", strings.Repeat("b", 40)}, {"0.1.0", strings.Repeat("a", 40)}}
	if len(rs) != len(want) || rs[0] != want[0] || rs[1] != want[1] {
		t.Fatalf("Releases = %+v, want %+v", rs, want)
	}
	p, err := Previous(sample)
	if err != nil || p != want[0] {
		t.Fatalf("Previous = %+v, %v; want %+v", p, err, want[0])
	}
}

func TestReleasesRefuseWhatCannotBeBuilt(t *testing.T) {
	for name, c := range map[string]struct{ text, want string }{
		"short hash": {"## 0.1.0 — 2026-11-24\n\ncommit `8875e54`\n", "release 0.1.0 names no commit"},
		"no hash":    {"## 0.1.0\n\n- things\n## 0.0.9\n`" + strings.Repeat("c", 40) + "`\n", "release 0.1.0 names no commit"},
		"no release": {"# Changelog\n\n## Unreleased\n", "names no release"},
	} {
		_, err := Previous(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

// TestRepositoryChangelogNamesThePreviousRelease: the repository's own
// CHANGELOG.md parses and names a release to upgrade from.
func TestRepositoryChangelogNamesThePreviousRelease(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Previous(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if p.Version == "" || len(p.Commit) != 40 {
		t.Fatalf("previous release %+v", p)
	}
	// The working tree's release heads the changelog as unreleased, and
	// is not the release it upgrades from.
	next, _, _ := strings.Cut(version.Version, "-")
	if !strings.Contains(string(b), "## Unreleased ("+next+")") {
		t.Errorf("CHANGELOG.md has no heading %q for pkg/version/VERSION %s", "## Unreleased ("+next+")", version.Version)
	}
	if next == p.Version {
		t.Errorf("pkg/version/VERSION %s is the previous release %s itself: start the next one (e.g. %s-dev)", version.Version, p.Version, "0.x.0")
	}
}
