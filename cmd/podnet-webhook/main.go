// Command podnet-webhook is podnet's mutating admission webhook for pods: it
// checks every pod that asks for networks against the NetworkProfiles,
// stamps a signed approval, and adds the readiness gate and the wait init
// container. It holds no privilege and the only key that can sign approvals.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager/signals"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/pkg/hold"
	"podnet.io/podnet/pkg/kubeclient"
	"podnet.io/podnet/pkg/version"
	"podnet.io/podnet/webhook"
)

// flags are the command line.
type flags struct {
	port        int
	certDir     string
	certName    string
	keyName     string
	signingKey  string
	metricsAddr string
	probeAddr   string
	pprofAddr   string
	waitImage   string
	waitTimeout time.Duration
	waitCPU     string
	waitMemory  string
	// multusRequests reads Multus' request annotation (migration).
	multusRequests bool
	// holdPods and attachAtSandboxSetup choose how pods are held
	// (holdMode).
	holdPods             string
	attachAtSandboxSetup bool
	// nriTolerate is --nri-tolerate-annotations (nriTolerate).
	nriTolerate string
	// set are the names of the flags given on the command line.
	set   map[string]bool
	qps   float64
	burst int
}

func main() {
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("podnet-webhook"))
		return
	}
	var f flags
	flag.IntVar(&f.port, "port", 9443, "port the webhook serves HTTPS on")
	flag.StringVar(&f.certDir, "cert-dir", "/etc/podnet/serving", "folder of the serving certificate and key; both are reloaded when they change")
	flag.StringVar(&f.certName, "cert-name", "tls.crt", "serving certificate file name in --cert-dir")
	flag.StringVar(&f.keyName, "key-name", "tls.key", "serving key file name in --cert-dir")
	flag.StringVar(&f.signingKey, "signing-key", "/etc/podnet/signing/approval.key", "Ed25519 private key (PEM PKCS#8) that signs approvals; reloaded when it changes")
	flag.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	flag.StringVar(&f.pprofAddr, "pprof-bind-address", "", "address of Go's /debug/pprof profiles (CPU, heap); empty or 0 disables them")
	flag.StringVar(&f.waitImage, "wait-image", webhook.DefaultWaitImage, "image of the injected wait init container; it must hold podnet-wait at "+webhook.WaitBinary+" (the wait image)")
	flag.BoolVar(&f.multusRequests, "multus-requests", false, "read Multus' "+v1alpha1.MultusNetworksAnnotation+" as a podnet request on pods without "+v1alpha1.NetworksAnnotation+" (migration from Multus; the webhook's matchConditions must then send such pods too: deploy/overlays/multus-migration)")
	flag.StringVar(&f.waitCPU, "wait-cpu", webhook.DefaultWaitCPU, "CPU request and limit of the wait init container, in pods whose containers set any CPU or memory request or limit (others get none, so they stay BestEffort)")
	flag.StringVar(&f.waitMemory, "wait-memory", webhook.DefaultWaitMemory, "memory request and limit of the wait init container, in pods whose containers set any CPU or memory request or limit")
	flag.DurationVar(&f.waitTimeout, "wait-timeout", webhook.DefaultWaitTimeout, "how long the wait init container waits for the pod's interfaces")
	flag.StringVar(&f.holdPods, "hold-pods", string(v1alpha1.HoldAuto), hold.Usage())
	flag.StringVar(&f.nriTolerate, "nri-tolerate-annotations", "", "comma-separated annotation keys that the nodes' runtimes read to let a pod's containers run without its required NRI plugins (NRI default validator's tolerate_missing_plugins_annotation, where an admin set it): a podnet pod carrying one, under the key or its /pod and /container.<name> forms, is refused")
	flag.BoolVar(&f.attachAtSandboxSetup, "attach-at-sandbox-setup", false, "deprecated: --hold-pods="+string(v1alpha1.HoldAttachAtSandboxSetup)+" (false: --hold-pods="+string(v1alpha1.HoldWaitInitContainer)+")")
	zopts := zap.Options{}
	flag.Float64Var(&f.qps, "kube-api-qps", 20, "client-side limit of API requests per second (the webhook only watches profiles and namespaces)")
	flag.IntVar(&f.burst, "kube-api-burst", 40, "client-side burst of API requests above --kube-api-qps")
	zopts.BindFlags(flag.CommandLine)
	flag.Parse()
	f.set = map[string]bool{}
	flag.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	log.SetLogger(zap.New(zap.UseFlagOptions(&zopts)))

	if err := run(f); err != nil {
		fmt.Fprintf(os.Stderr, "podnet-webhook: %v\n", err)
		os.Exit(1)
	}
}

func run(f flags) error {
	if f.waitTimeout <= 0 {
		return fmt.Errorf("--wait-timeout %s: must be positive", f.waitTimeout)
	}
	if f.waitImage == "" {
		return fmt.Errorf("--wait-image: must not be empty")
	}
	waitCPU, waitMemory, err := webhook.ParseWaitResources(f.waitCPU, f.waitMemory)
	if err != nil {
		return err
	}
	hold, err := holdMode(f)
	if err != nil {
		return err
	}
	tolerate, err := nriTolerate(f.nriTolerate)
	if err != nil {
		return err
	}
	cfg, err := kubeclient.Config("podnet-webhook", f.qps, f.burst)
	if err != nil {
		return err
	}
	scheme, err := webhook.Scheme()
	if err != nil {
		return err
	}
	// The install's namespace, where the controller writes the hold
	// choice of --hold-pods=auto.
	ns := cmp.Or(os.Getenv("POD_NAMESPACE"), v1alpha1.SystemNamespace)
	opts := webhook.CacheOptionsIn(ns)
	opts.Scheme = scheme
	c, err := cache.New(cfg, opts)
	if err != nil {
		return fmt.Errorf("informer cache: %w", err)
	}
	// certwatcher reloads the serving pair when the files change.
	h := newHost(c, crwebhook.NewServer(crwebhook.Options{
		Port:     f.port,
		CertDir:  f.certDir,
		CertName: f.certName,
		KeyName:  f.keyName,
	}))
	// New pods' claims and templates are read live, one GET each.
	claims, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("claim reader: %w", err)
	}
	key := webhook.NewSigningKey(func() (approval.Signer, error) { return certs.LoadSigner(f.signingKey) })
	if _, err := webhook.Register(h, webhook.Options{
		Key:        key,
		Wait:       webhook.WaitOptions{Image: f.waitImage, Timeout: f.waitTimeout, CPU: waitCPU, Memory: waitMemory},
		Registerer: metrics.Registry,

		MultusRequests: f.multusRequests,
		Hold:           hold,
		NRITolerate:    tolerate,
		Claims:         claims,

		HoldChoiceNamespace: ns,
	}); err != nil {
		return err
	}
	// Metrics are plain HTTP inside the pod network: serving them with
	// authentication would need RBAC for token and access reviews, which
	// the webhook otherwise does without.
	return h.run(signals.SetupSignalHandler(), addrs{probes: f.probeAddr, metrics: f.metricsAddr, pprof: f.pprofAddr})
}
