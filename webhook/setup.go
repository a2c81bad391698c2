package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/nsmeta"
)

// Options wire the webhook into a manager.
type Options struct {
	// Key signs approvals.
	Key *SigningKey
	// Wait configures the injected init container.
	Wait WaitOptions
	// AttachAtSandboxSetup: see Handler.AttachAtSandboxSetup.
	AttachAtSandboxSetup bool
	// Registerer receives the decision metrics; in the binary it is
	// controller-runtime's registry, served on the metrics endpoint.
	Registerer prometheus.Registerer
	// MultusRequests reads Multus' request annotation as podnet's
	// (migration from Multus); see Handler.MultusRequests.
	MultusRequests bool
}

// CacheOptions are the manager cache settings the webhook needs. Only
// opted-in namespaces are cached, as metadata (the API server sends no spec
// or status), and of that only name and labels: with thousands of
// namespaces in a cluster the webhook keeps little more than the label sets
// it decides on. A read of anything else fails instead of quietly starting
// an informer (say, for pods) that would cost memory and API server watches.
func CacheOptions() cache.Options {
	return cache.Options{
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			nsmeta.Object(): {
				Label:     labels.SelectorFromSet(labels.Set{v1alpha1.EnabledLabel: "true"}),
				Transform: nsmeta.Trim,
			},
		},
	}
}

// Register serves the handler on the manager's webhook server at Path and
// adds the health and readiness checks. The manager must have been built
// with CacheOptions.
func Register(mgr manager.Manager, o Options) (*Handler, error) {
	if o.Key == nil {
		return nil, errors.New("register webhook: no signing key")
	}
	// The informers are asked for before the manager starts, so that the
	// cache starts and syncs them with everything else.
	c := mgr.GetCache()
	if _, err := c.GetInformer(context.Background(), nsmeta.Object()); err != nil {
		return nil, fmt.Errorf("register webhook: informer for namespaces: %w", err)
	}
	informer, err := c.GetInformer(context.Background(), &v1alpha1.NetworkProfile{})
	if err != nil {
		return nil, fmt.Errorf("register webhook: informer for networkprofiles: %w", err)
	}
	profiles, err := newProfileSnapshot(c, informer)
	if err != nil {
		return nil, fmt.Errorf("register webhook: networkprofile events: %w", err)
	}
	synced := &cacheSynced{cache: c}
	if err := mgr.Add(synced); err != nil {
		return nil, fmt.Errorf("register webhook: %w", err)
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register webhook metrics: %w", err)
	}
	h := &Handler{Reader: c, Signer: o.Key, Ready: synced.ready, Wait: o.Wait, AttachAtSandboxSetup: o.AttachAtSandboxSetup, Metrics: m, MultusRequests: o.MultusRequests, profiles: profiles}
	mgr.GetWebhookServer().Register(Path, newReviewServer(h))

	checks := []struct {
		name  string
		ready bool
		check healthz.Checker
	}{
		{"ping", false, healthz.Ping},
		{"informers", true, checker(synced.ready)},
		{"signing-key", true, checker(o.Key.Loaded)},
		{"webhook-server", true, mgr.GetWebhookServer().StartedChecker()},
	}
	for _, ch := range checks {
		add := mgr.AddHealthzCheck
		if ch.ready {
			add = mgr.AddReadyzCheck
		}
		if err := add(ch.name, ch.check); err != nil {
			return nil, fmt.Errorf("register webhook check %s: %w", ch.name, err)
		}
	}
	return h, nil
}

func checker(f func() error) healthz.Checker {
	return func(*http.Request) error { return f() }
}

// cacheSynced is a manager runnable that records when the informer cache
// has synced, so that readiness and the handler can ask without blocking.
type cacheSynced struct {
	cache  cache.Cache
	synced atomic.Bool
}

func (s *cacheSynced) Start(ctx context.Context) error {
	if s.cache.WaitForCacheSync(ctx) {
		s.synced.Store(true)
	}
	return nil
}

func (s *cacheSynced) ready() error {
	if !s.synced.Load() {
		return errors.New("informer cache of namespaces and networkprofiles not synced yet")
	}
	return nil
}
