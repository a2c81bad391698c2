package webhook

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
	"podnet.io/podnet/pkg/nsmeta"
	"podnet.io/podnet/pkg/pagedlist"
)

// Options wire the webhook into a manager.
type Options struct {
	// Key signs approvals.
	Key *SigningKey
	// Wait configures the injected init container.
	Wait WaitOptions
	// NRITolerate: see Handler.NRITolerate.
	NRITolerate []string
	// Hold: see Handler.Hold.
	Hold v1alpha1.HoldMode
	// HoldChoiceNamespace is where the hold choice of --hold-pods=auto is
	// read (the install's namespace, as given to CacheOptionsIn); ""
	// means v1alpha1.SystemNamespace.
	HoldChoiceNamespace string
	// Registerer receives the decision metrics; in the binary it is
	// controller-runtime's registry, served on the metrics endpoint.
	Registerer prometheus.Registerer
	// MultusRequests reads Multus' request annotation as podnet's
	// (migration from Multus); see Handler.MultusRequests.
	MultusRequests bool
	// Claims reads the ResourceClaims and templates new pods name; a live
	// client, not the cache (see Handler.Claims).
	Claims client.Reader
}

// CacheOptions are the manager cache settings the webhook needs. Only
// opted-in namespaces are cached, as metadata (the API server sends no spec
// or status), and of that only name and labels: with thousands of
// namespaces in a cluster the webhook keeps little more than the label sets
// it decides on. A read of anything else fails instead of quietly starting
// an informer (say, for pods) that would cost memory and API server watches.
// Where the API server does not stream the initial lists, they arrive in
// pages, each trimmed as it comes, so that the webhook's memory at startup
// stays near what it keeps (see pkg/pagedlist).
func CacheOptions() cache.Options {
	return CacheOptionsIn(v1alpha1.SystemNamespace)
}

// CacheOptionsIn is CacheOptions for an install in namespace, where the
// webhook reads the hold choice of --hold-pods=auto.
func CacheOptionsIn(namespace string) cache.Options {
	return cache.Options{
		ReaderFailOnMissingInformer: true,
		NewInformer:                 pagedlist.NewInformer,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			nsmeta.Object(): {
				Label:     labels.SelectorFromSet(labels.Set{v1alpha1.EnabledLabel: "true"}),
				Transform: nsmeta.Trim,
			},
			holdChoiceObject(): holdChoiceCache(namespace),
		},
	}
}

// Scheme is the webhook's own scheme: podnet's types and the resource.k8s.io
// claims and templates it reads, nothing else. The webhook reads namespaces
// as metadata, which needs no Go type, and decodes admission reviews and
// their pods itself, so registering every built-in API group, as the other
// components' scheme does, would only cost memory.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("webhook scheme: %w", err)
	}
	// The claims and templates new pods name, read live (Options.Claims).
	if err := resourcev1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("webhook scheme: %w", err)
	}
	return scheme, nil
}

// Host is what Register needs of the process that serves the webhook: an
// informer cache built with CacheOptions, an admission webhook server and
// health and readiness checks. A controller-runtime manager is one; the
// binary assembles its own from the same parts (cmd/podnet-webhook),
// which links and initialises much less of controller-runtime.
type Host interface {
	GetCache() cache.Cache
	GetWebhookServer() crwebhook.Server
	AddHealthzCheck(name string, check healthz.Checker) error
	AddReadyzCheck(name string, check healthz.Checker) error
}

// Register serves the handler on the host's webhook server at Path and
// adds the health and readiness checks.
func Register(host Host, o Options) (*Handler, error) {
	if o.Key == nil {
		return nil, errors.New("register webhook: no signing key")
	}
	if o.Hold != "" {
		if _, err := hold.Parse("register webhook: hold mode", string(o.Hold)); err != nil {
			return nil, err
		}
	}
	// The informers are asked for before the host starts its cache, so
	// that the cache starts and syncs them with everything else.
	c := host.GetCache()
	nsInformer, err := c.GetInformer(context.Background(), nsmeta.Object())
	if err != nil {
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
	synced := &informersSynced{informers: []cache.Informer{nsInformer, informer}}
	var autoHold func() v1alpha1.HoldMode
	if o.Hold == v1alpha1.HoldAuto {
		choice, err := c.GetInformer(context.Background(), holdChoiceObject())
		if err != nil {
			return nil, fmt.Errorf("register webhook: informer for the hold choice: %w", err)
		}
		synced.informers = append(synced.informers, choice)
		autoHold = cachedHoldChoice(c, cmp.Or(o.HoldChoiceNamespace, v1alpha1.SystemNamespace))
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := NewMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("register webhook metrics: %w", err)
	}
	h := &Handler{Reader: c, Signer: o.Key, Ready: synced.ready, Wait: o.Wait, Hold: o.Hold, NRITolerate: o.NRITolerate, AutoHold: autoHold, Metrics: m, MultusRequests: o.MultusRequests, Claims: o.Claims, profiles: profiles}
	host.GetWebhookServer().Register(Path, newReviewServer(h))
	host.GetWebhookServer().Register(ClaimPath, newClaimWebhook(h))

	checks := []struct {
		name  string
		ready bool
		check healthz.Checker
	}{
		{"ping", false, healthz.Ping},
		{"informers", true, checker(synced.ready)},
		{"signing-key", true, checker(o.Key.Loaded)},
		{"webhook-server", true, host.GetWebhookServer().StartedChecker()},
	}
	for _, ch := range checks {
		add := host.AddHealthzCheck
		if ch.ready {
			add = host.AddReadyzCheck
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

// informersSynced answers, without blocking, whether the webhook's
// informers have synced; once they have, it stays true, as a synced
// informer does.
type informersSynced struct {
	informers []cache.Informer
	synced    atomic.Bool
}

func (s *informersSynced) ready() error {
	if s.synced.Load() {
		return nil
	}
	for _, i := range s.informers {
		if !i.HasSynced() {
			return errors.New("informer cache of namespaces and networkprofiles not synced yet")
		}
	}
	s.synced.Store(true)
	return nil
}
