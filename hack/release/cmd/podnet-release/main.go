//go:build linux

// Command podnet-release builds the previous release CHANGELOG.md names
// (release.Build), so that make test can build it beside the suites
// before the upgrade suite needs it. It prints the release's folder.
//
//	go run ./hack/release/cmd/podnet-release build [-root DIR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"podnet.io/podnet/hack/release"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "podnet-release:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 || args[0] != "build" {
		return fmt.Errorf("usage: podnet-release build [-root DIR]")
	}
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	root := fs.String("root", ".", "podnet repository root")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	r, err := filepath.Abs(*root)
	if err != nil {
		return err
	}
	changelog, err := os.ReadFile(filepath.Join(r, "CHANGELOG.md"))
	if err != nil {
		return err
	}
	prev, err := release.Previous(string(changelog))
	if err != nil {
		return err
	}
	dir, err := release.Build(context.Background(), r, prev, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Println(dir)
	return nil
}
