package kubeclient

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"podnet.io/podnet/api/v1alpha1"
)

// ValidateLimits checks the --kube-api-qps and --kube-api-burst values of
// a component: a client-side limit must exist and stay below what a single
// client could sensibly need.
func ValidateLimits(qps float64, burst int) error {
	var errs []error
	if qps <= 0 || qps > 1000 {
		errs = append(errs, fmt.Errorf("--kube-api-qps %g: must be above 0 and at most 1000", qps))
	}
	if burst < 1 || burst > 2000 {
		errs = append(errs, fmt.Errorf("--kube-api-burst %d: must be between 1 and 2000", burst))
	}
	return errors.Join(errs...)
}

// Setup returns the scheme and the kubeconfig (from the usual places:
// --kubeconfig, $KUBECONFIG, in-cluster) with userAgent and the client-side
// limit of qps requests per second and burst above it.
func Setup(userAgent string, qps float64, burst int) (*runtime.Scheme, *rest.Config, error) {
	if err := ValidateLimits(qps, burst); err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, nil, fmt.Errorf("scheme: %w", err)
	}
	cfg, err := Config(userAgent, qps, burst)
	return scheme, cfg, err
}

// Config is the kubeconfig of Setup alone, for a component that builds a
// scheme of its own.
func Config(userAgent string, qps float64, burst int) (*rest.Config, error) {
	if err := ValidateLimits(qps, burst); err != nil {
		return nil, err
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(qps), burst
	cfg.UserAgent = userAgent
	return cfg, nil
}
