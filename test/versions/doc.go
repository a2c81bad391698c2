// Package versions holds only a test: every podnet binary, built as `make
// build` builds it, reports the release of pkg/version.
package versions
