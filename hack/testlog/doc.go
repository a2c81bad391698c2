// Package main is testlog, the recorder behind `make test`'s timing table.
//
// `testlog record FILE` reads `go test -json` events on its standard input,
// keeps every event in FILE, and prints what a plain `go test` would: the
// package lines, the whole output of a failed test, build failures, plus a
// line for every test that took 10 s or more so that a long suite shows its
// progress. `testlog report DIR` prints, from DIR's stages.tsv (written by
// hack/stage.sh) and the *.json files recorded there, each stage's time and
// the slowest tests. It only reads and prints; it never decides whether a
// run passed (go test's exit status does).
package main
