package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"podnet.io/podnet/pkg/uninstall"
)

// uninstallFlags are the command line of `podnet-controller uninstall`.
type uninstallFlags struct {
	kubeconfig string
	namespace  string
	daemonSet  string
	timeout    time.Duration
}

// runUninstall is `podnet-controller uninstall`: it marks the agent's
// DaemonSet, waits for every node's agent and clears the Nodes.
func runUninstall(args []string) int {
	fs := flag.NewFlagSet("podnet-controller uninstall", flag.ContinueOnError)
	var f uninstallFlags
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of an identity allowed to patch the agent's DaemonSet and the Nodes; empty: $KUBECONFIG, ~/.kube/config or the pod's own service account")
	fs.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", "podnet-system"), "namespace of the agent's DaemonSet (default $POD_NAMESPACE, else podnet-system)")
	fs.StringVar(&f.daemonSet, "daemonset", "podnet-agent", "name of the agent's DaemonSet")
	fs.DurationVar(&f.timeout, "timeout", uninstall.DefaultTimeout, "how long to wait for every node's agent")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := uninstallCluster(f); err != nil {
		fmt.Fprintf(os.Stderr, "podnet-controller uninstall: %v\n", err)
		return 1
	}
	return 0
}

func validateUninstallFlags(f uninstallFlags) error {
	var errs []error
	if f.namespace == "" {
		errs = append(errs, errors.New("--namespace: must not be empty"))
	}
	if f.daemonSet == "" {
		errs = append(errs, errors.New("--daemonset: must not be empty"))
	}
	if f.timeout < time.Second || f.timeout > time.Hour {
		errs = append(errs, fmt.Errorf("--timeout %s: must be between 1s and 1h", f.timeout))
	}
	return errors.Join(errs...)
}

func uninstallCluster(f uninstallFlags) error {
	if err := validateUninstallFlags(f); err != nil {
		return err
	}
	cfg, err := restConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return uninstall.Run(ctx, c, uninstall.Options{
		DaemonSet: types.NamespacedName{Namespace: f.namespace, Name: f.daemonSet},
		Timeout:   f.timeout,
		Log:       os.Stdout,
	})
}

// restConfig reads the kubeconfig given, or finds one as kubectl does
// (and in a pod, its service account).
func restConfig(path string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	} else {
		cfg, err = config.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.UserAgent = "podnet-controller/uninstall"
	return cfg, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
