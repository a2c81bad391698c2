// Command cert-manager runs cert-manager's own certificate controllers and
// CA injector, built from the github.com/cert-manager/cert-manager module,
// so that podnet's local cluster gets its webhook serving certificate and
// CA bundle exactly as a production cluster with cert-manager does.
//
//	cert-manager controller [--kubeconfig FILE] [--cluster-resource-namespace NS] ...
//	cert-manager cainjector [--kubeconfig FILE] ...
//
// cert-manager publishes its commands as modules that only build inside its
// own repository, so this module wires the published controller packages
// itself. It lives in a module of its own because cert-manager pins
// Kubernetes libraries that differ from podnet's.
//
// Only the issuers that need no outside service are linked in (SelfSigned
// and CA); ACME, Vault and Venafi, the ingress and Gateway shims and
// cert-manager's own admission webhook are left out. This command must not
// grow podnet logic: it is a build of someone else's controllers.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

const usage = "usage: cert-manager controller|cainjector [flags]"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	logf.InitLogs()
	defer logf.FlushLogs()

	var err error
	switch os.Args[1] {
	case "controller":
		err = runController(ctx, os.Args[2:])
	case "cainjector":
		err = runCAInjector(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q; %s", os.Args[1], usage)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager:", err)
		logf.FlushLogs()
		os.Exit(1)
	}
}

// commonFlags are the flags both commands take.
type commonFlags struct {
	kubeconfig  string
	healthzAddr string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "kubeconfig file; empty means the in-cluster service account")
	fs.StringVar(&c.healthzAddr, "healthz-addr", ":9403", "address of the /healthz endpoint; empty disables it")
}

// serveHealthz answers /healthz with 200 until ctx ends. The probe only
// says the process is up and serving; whether certificates are issued is
// visible on the Certificate objects themselves.
func serveHealthz(ctx context.Context, addr string) error {
	if addr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for healthz on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			logf.Log.Error(err, "shut down healthz server", "address", addr)
		}
	}()
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logf.Log.Error(err, "healthz server stopped", "address", addr)
		}
	}()
	return nil
}
