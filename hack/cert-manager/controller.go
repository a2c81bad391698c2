package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// Each of these packages registers its control loop(s) with
	// controller.Register when imported; pkg/issuer/* register the issuer
	// kinds the issuers controllers can set up.
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllerNames are the control loops a SelfSigned → CA chain needs:
// issuer readiness, the Certificate life cycle (trigger, key, request,
// issue, readiness, revision history), approval of CertificateRequests and
// the two signers.
var controllerNames = []string{
	"issuers",
	"clusterissuers",
	"certificaterequests-approver",
	"certificaterequests-issuer-selfsigned",
	"certificaterequests-issuer-ca",
	"certificates-trigger",
	"certificates-key-manager",
	"certificates-request-manager",
	"certificates-issuing",
	"certificates-readiness",
	"certificates-revision-manager",
}

type controllerFlags struct {
	commonFlags
	clusterResourceNamespace string
	workers                  int
	minBackoff, maxBackoff   time.Duration
}

func runController(ctx context.Context, args []string) error {
	var f controllerFlags
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	f.register(fs)
	fs.StringVar(&f.clusterResourceNamespace, "cluster-resource-namespace", "cert-manager", "namespace of the Secrets that ClusterIssuers refer to")
	fs.IntVar(&f.workers, "workers", 2, "workers per control loop")
	// cert-manager waits 1h before retrying a failed issuance by default;
	// the flags let a test cluster retry sooner.
	fs.DurationVar(&f.minBackoff, "min-backoff", time.Hour, "first delay before a failed CertificateRequest is retried")
	fs.DurationVar(&f.maxBackoff, "max-backoff", 32*time.Hour, "longest delay before a failed CertificateRequest is retried")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := validateControllerFlags(f); err != nil {
		return err
	}
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         f.kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: f.clusterResourceNamespace},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: f.minBackoff,
			CertificateRequestMaximumBackoffDuration: f.maxBackoff,
		},
	})
	if err != nil {
		return fmt.Errorf("build controller context: %w", err)
	}
	base, err := factory.Build()
	if err != nil {
		return fmt.Errorf("build controller context: %w", err)
	}
	loops, err := buildLoops(factory, controller.Known(), controllerNames)
	if err != nil {
		return err
	}
	if err := serveHealthz(ctx, f.healthzAddr); err != nil {
		return err
	}

	// Every loop registered its informers while being built; only now do
	// the shared factories know what to start.
	var wg sync.WaitGroup
	errc := make(chan error, len(loops))
	for name, loop := range loops {
		wg.Go(func() {
			logf.FromContext(ctx).Info("starting control loop", "controller", name)
			if err := loop.Run(f.workers, ctx); err != nil {
				errc <- fmt.Errorf("control loop %q: %w", name, err)
				cancel()
			}
		})
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func validateControllerFlags(f controllerFlags) error {
	switch {
	case f.clusterResourceNamespace == "":
		return errors.New("--cluster-resource-namespace must not be empty")
	case f.workers < 1:
		return fmt.Errorf("--workers %d: must be at least 1", f.workers)
	case f.minBackoff <= 0 || f.maxBackoff < f.minBackoff:
		return fmt.Errorf("--min-backoff %s, --max-backoff %s: need 0 < min <= max", f.minBackoff, f.maxBackoff)
	}
	return nil
}

// buildLoops constructs the named control loops from the registry; a name
// that no linked package registered is a build mistake, reported with the
// names that are available.
func buildLoops(factory *controller.ContextFactory, known map[string]controller.Constructor, names []string) (map[string]controller.Interface, error) {
	loops := make(map[string]controller.Interface, len(names))
	for _, name := range names {
		build, ok := known[name]
		if !ok {
			var have []string
			for k := range known {
				have = append(have, k)
			}
			slices.Sort(have)
			return nil, fmt.Errorf("control loop %q is not linked in; have: %s", name, strings.Join(have, ", "))
		}
		loop, err := build(factory)
		if err != nil {
			return nil, fmt.Errorf("set up control loop %q: %w", name, err)
		}
		loops[name] = loop
	}
	return loops, nil
}
