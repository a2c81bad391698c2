package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

// host runs what the webhook needs and nothing else: the informer cache,
// the admission server, the probes, the metrics and, when asked, the
// profiles. A controller-runtime manager would do the same, but it links
// and initialises leader election, event recorders, controllers and the
// CRD conversion webhook (with every apiextensions type), whose code pages
// and registrations the webhook would carry in memory for nothing.
type host struct {
	cache   cache.Cache
	server  crwebhook.Server
	healthz map[string]healthz.Checker
	readyz  map[string]healthz.Checker
}

// addrs are where host serves its plain HTTP endpoints; "" or "0"
// disables one.
type addrs struct {
	probes, metrics, pprof string
}

func newHost(c cache.Cache, server crwebhook.Server) *host {
	return &host{cache: c, server: server, healthz: map[string]healthz.Checker{}, readyz: map[string]healthz.Checker{}}
}

func (h *host) GetCache() cache.Cache              { return h.cache }
func (h *host) GetWebhookServer() crwebhook.Server { return h.server }

func (h *host) AddHealthzCheck(name string, check healthz.Checker) error {
	return addCheck(h.healthz, name, check)
}

func (h *host) AddReadyzCheck(name string, check healthz.Checker) error {
	return addCheck(h.readyz, name, check)
}

func addCheck(checks map[string]healthz.Checker, name string, check healthz.Checker) error {
	if _, dup := checks[name]; dup {
		return fmt.Errorf("check %q added twice", name)
	}
	checks[name] = check
	return nil
}

// run serves until ctx ends or a part fails, and returns the first
// failure.
func (h *host) run(ctx context.Context, at addrs) error {
	// The Go and process collectors a manager would register: the heap
	// and CPU figures of /metrics.
	if err := metrics.Registry.Register(collectors.NewGoCollector()); err != nil {
		return fmt.Errorf("go metrics: %w", err)
	}
	if err := metrics.Registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return fmt.Errorf("process metrics: %w", err)
	}
	parts := []func(context.Context) error{h.cache.Start, h.server.Start}
	for _, s := range []struct {
		name, addr string
		handler    http.Handler
	}{
		{"health probe", at.probes, h.probeHandler()},
		{"metrics", at.metrics, promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})},
		{"pprof", at.pprof, pprofHandler()},
	} {
		if s.addr == "" || s.addr == "0" {
			continue
		}
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return fmt.Errorf("%s server on %s: %w", s.name, s.addr, err)
		}
		parts = append(parts, func(ctx context.Context) error { return serveHTTP(ctx, s.name, ln, s.handler) })
	}
	return runAll(ctx, parts)
}

// runAll runs every part until ctx ends or one fails, which stops the
// others; it returns once all have returned, with the first failure.
func runAll(ctx context.Context, parts []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(parts))
	for _, part := range parts {
		go func() { errs <- part(ctx) }()
	}
	var first error
	for range parts {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// probeHandler serves /healthz and /readyz, and each check on its own
// (/readyz/informers), as a manager does.
func (h *host) probeHandler() http.Handler {
	mux := http.NewServeMux()
	for path, checks := range map[string]map[string]healthz.Checker{"/healthz": h.healthz, "/readyz": h.readyz} {
		handler := http.StripPrefix(path, &healthz.Handler{Checks: checks})
		mux.Handle(path, handler)
		mux.Handle(path+"/", handler)
	}
	return mux
}

func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serveHTTP serves handler on ln until ctx ends, then shuts down.
func serveHTTP(ctx context.Context, name string, ln net.Listener, handler http.Handler) error {
	srv := &http.Server{
		Handler:           handler,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		MaxHeaderBytes:    1 << 20,
		IdleTimeout:       90 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s server: %w", name, err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("%s server shutdown: %w", name, err)
	}
	return nil
}
