// Package version names the podnet release a binary was built from: the
// one line of VERSION (the only place the release is written down; images,
// manifests and `kubectl podnet version` take it from here) and, when the
// Go toolchain recorded it, the git commit.
//
// It imports only the standard library, because podnet-wait (which runs in
// every podnet pod and must stay small) links it too.
package version
