// Command kubectl-podnet is the kubectl plugin `kubectl podnet`: copy it
// onto PATH and run `kubectl podnet --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"podnet.io/podnet/kubectlpodnet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := kubectlpodnet.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
