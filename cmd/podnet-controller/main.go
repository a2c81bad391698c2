// Command podnet-controller runs podnet's cluster-wide work once per
// cluster: it deletes the IPClaims of pods that are gone, writes
// NetworkProfile status and each node's NodePolicy. Run two replicas; a Lease elects the one that
// works, the other waits to take over.
//
// `podnet-controller uninstall` takes podnet off the cluster's nodes
// before its objects are deleted (pkg/uninstall): the Helm chart's
// pre-delete hook and `make undeploy` run it.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller"
	"podnet.io/podnet/pkg/kubeclient"
	"podnet.io/podnet/pkg/version"
)

type flags struct {
	leaderElect   bool
	leaseNS       string
	grace, period time.Duration
	statusBatch   time.Duration
	qps           float64
	burst         int
	metricsAddr   string
	probeAddr     string
	pprofAddr     string
}

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String(controller.Name))
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "uninstall" {
		os.Exit(runUninstall(os.Args[2:]))
	}
	var f flags
	flag.BoolVar(&f.leaderElect, "leader-elect", true, "elect one working replica through a Lease")
	flag.StringVar(&f.leaseNS, "leader-election-namespace", os.Getenv("POD_NAMESPACE"), "namespace of the Lease (default $POD_NAMESPACE)")
	flag.DurationVar(&f.grace, "gc-grace", time.Minute, "how long a claim's pod must have been gone before the claim is deleted")
	flag.DurationVar(&f.period, "gc-period", 10*time.Minute, "how often the cache is looked over for claims whose pod is gone (deletions are handled as they happen)")
	flag.DurationVar(&f.statusBatch, "profile-status-batch", controller.DefaultStatusBatch, "how long a NetworkProfile's status gathers claim changes before it writes their usage (spec changes are written at once)")
	flag.Float64Var(&f.qps, "kube-api-qps", 50, "client-side limit of API requests per second")
	flag.IntVar(&f.burst, "kube-api-burst", 100, "client-side burst of API requests above --kube-api-qps")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof endpoints; 0 disables them")
	zopts := zap.Options{}
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))
	if err := run(f); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controller.Name, err)
		os.Exit(1)
	}
}

func validateFlags(f flags) error {
	var errs []error
	if f.grace < time.Second {
		errs = append(errs, fmt.Errorf("--gc-grace %s: must be at least 1s", f.grace))
	}
	if f.statusBatch < 0 || f.statusBatch > time.Minute {
		errs = append(errs, fmt.Errorf("--profile-status-batch %s: must be between 0 and 1m", f.statusBatch))
	}
	if f.period < time.Minute {
		errs = append(errs, fmt.Errorf("--gc-period %s: must be at least 1m", f.period))
	}
	if err := kubeclient.ValidateLimits(f.qps, f.burst); err != nil {
		errs = append(errs, err)
	}
	if f.leaderElect && f.leaseNS == "" {
		errs = append(errs, errors.New("--leader-election-namespace: must be set (or $POD_NAMESPACE) when --leader-elect is on"))
	}
	return errors.Join(errs...)
}

func run(f flags) error {
	if err := validateFlags(f); err != nil {
		return err
	}
	scheme, cfg, err := kubeclient.Setup(controller.Name, f.qps, f.burst)
	if err != nil {
		return err
	}
	if err := controller.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Cache:                   controller.CacheOptions(),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		LeaderElection:          f.leaderElect,
		LeaderElectionID:        controller.Name,
		LeaderElectionNamespace: f.leaseNS,
		// Hand the lease over at once on a clean shutdown (rollout).
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	m, err := controller.NewMetrics(metrics.Registry)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := controller.Setup(ctx, mgr, controller.Options{Grace: f.grace, Period: f.period, StatusBatch: f.statusBatch, Metrics: m, HoldChoiceNamespace: cmp.Or(f.leaseNS, v1alpha1.SystemNamespace)}); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	// Ready once the caches synced: a standby replica is ready too, so a
	// rollout never waits for the lease.
	if err := mgr.AddReadyzCheck("caches", func(r *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(r.Context()) {
			return errors.New("caches not synced")
		}
		return nil
	}); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
