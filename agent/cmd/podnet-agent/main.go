// Command podnet-agent is a placeholder until the real agent lands: it only
// prints its usage so that the binary and its container image can be built.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "usage: podnet-agent [flags] (not implemented yet)")
	os.Exit(2)
}
