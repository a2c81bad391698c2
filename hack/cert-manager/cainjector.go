package main

import (
	"context"
	"flag"
	"fmt"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// runCAInjector copies the CA of the Certificate named in an object's
// cert-manager.io/inject-ca-from annotation into its caBundle. Only
// webhook configurations are injected: podnet's CRDs have no conversion
// webhook and it serves no aggregated API.
func runCAInjector(ctx context.Context, args []string) error {
	var f commonFlags
	fs := flag.NewFlagSet("cainjector", flag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx = logf.NewContext(ctx, logf.Log, "cainjector")
	ctrl.SetLogger(logf.Log)

	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{kscheme.AddToScheme, cmscheme.AddToScheme, apiext.AddToScheme, apireg.AddToScheme} {
		if err := add(scheme); err != nil {
			return fmt.Errorf("build scheme: %w", err)
		}
	}
	mgr, err := ctrl.NewManager(util.RestConfigWithUserAgent(cfg, "cainjector"), ctrl.Options{
		Scheme: scheme,
		// Secrets are read directly, never cached: a cluster may hold many
		// large ones and the injector needs only a few.
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
		},
	})
	if err != nil {
		return fmt.Errorf("register injectors: %w", err)
	}
	if err := serveHealthz(ctx, f.healthzAddr); err != nil {
		return err
	}
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// restConfig loads the kubeconfig file, or the in-cluster configuration
// when none is given.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", kubeconfig, err)
	}
	return cfg, nil
}
