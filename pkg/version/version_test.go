package version

import (
	"regexp"
	"runtime/debug"
	"testing"
)

// semver is the shape CHANGELOG.md and the image tags rely on.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?$`)

func TestVersionIsSemver(t *testing.T) {
	if !semver.MatchString(Version) {
		t.Fatalf("VERSION holds %q, want a semantic version such as 0.2.0 or 0.2.0-dev", Version)
	}
}

func TestCommitOf(t *testing.T) {
	cases := []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"none", nil, ""},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}, "abc"},
		{"dirty", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "abc"}}, "abc-dirty"},
		{"modified without revision", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}}, ""},
	}
	for _, c := range cases {
		if got := commitOf(c.settings); got != c.want {
			t.Errorf("%s: commitOf = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestFormat(t *testing.T) {
	if got := format("podnet-agent", "0.1.0", ""); got != "podnet-agent 0.1.0" {
		t.Errorf("without commit: %q", got)
	}
	if got := format("podnet-agent", "0.1.0", "abc"); got != "podnet-agent 0.1.0 (commit abc)" {
		t.Errorf("with commit: %q", got)
	}
}

func TestRequested(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"version"}} {
		if !Requested(args) {
			t.Errorf("Requested(%q) = false", args)
		}
	}
	for _, args := range [][]string{nil, {"--version", "x"}, {"--node-name=version"}, {"wait"}} {
		if Requested(args) {
			t.Errorf("Requested(%q) = true", args)
		}
	}
}
