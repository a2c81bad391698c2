// Command podnet-webhook is a placeholder until the real webhook lands: it only
// prints its usage so that the binary and its container image can be built.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "usage: podnet-webhook [flags] (not implemented yet)")
	os.Exit(2)
}
