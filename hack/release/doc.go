// Package release reads the releases CHANGELOG.md names (version and
// commit) and unpacks a release's tree from git history, so that a test can
// build and install the previous release with that tree's own tooling.
//
// It reads the repository and writes only into the folder it is given; it
// never changes the repository's refs, index or worktrees.
package release
