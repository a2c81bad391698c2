package agent

import (
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

// KeyFile is the file of the webhook's public keys the agent trusts
// (certs.FileVerifier).
type KeyFile interface {
	// Check reads the file as it is now and says why what is trusted is
	// not what it holds (broken or gone: the last good keys it still
	// lists stay trusted), or nil.
	Check() error
	// LoadErrors counts the broken contents seen.
	LoadErrors() uint64
	Path() string
}

// TrustedKeys makes a broken trusted-keys file visible. The agent keeps
// the last good keys the file still lists, so that running pods are not
// all refused over a botched rotation; a key the admin removed is not among
// them. That state must not go unnoticed: the "trusted-keys" readiness
// check fails naming the file and its fault, podnet_agent_trusted_keys_stale
// is 1, podnet_agent_trusted_keys_load_errors_total counts each broken
// content, and one log line marks each change between broken and good.
type TrustedKeys struct {
	File KeyFile
	Log  logr.Logger

	mu    sync.Mutex
	stale bool
}

// Ready is the "trusted-keys" readiness check.
func (k *TrustedKeys) Ready(*http.Request) error { return k.check() }

// check reads the file and logs a change of its state.
func (k *TrustedKeys) check() error {
	err := k.File.Check()
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case err != nil && !k.stale:
		k.Log.Error(err, "trusted approval keys' file does not load: the last good keys it still lists stay trusted until it does", "path", k.File.Path())
	case err == nil && k.stale:
		k.Log.Info("trusted approval keys' file loads again", "path", k.File.Path())
	}
	k.stale = err != nil
	return err
}

// Register adds the file's metrics to reg; each scrape reads the file.
func (k *TrustedKeys) Register(reg prometheus.Registerer) error {
	stale := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "podnet_agent_trusted_keys_stale",
		Help: "1 while the trusted approval keys' file does not load and the last good keys it still lists stay in use.",
	}, func() float64 {
		if k.check() != nil {
			return 1
		}
		return 0
	})
	errs := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "podnet_agent_trusted_keys_load_errors_total",
		Help: "Broken contents of the trusted approval keys' file seen since the agent started.",
	}, func() float64 { return float64(k.File.LoadErrors()) })
	for _, c := range []prometheus.Collector{stale, errs} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
