package kubectlpodnet

import (
	"context"
	"errors"
	"fmt"
	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"io"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"podnet.io/podnet/api/v1alpha1"
)

// exitError carries the exit code a command wants; any other error exits 1.
// A nil err exits quietly: the command printed its answer.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// options are the flags every subcommand shares: kubectl's connection
// flags (--kubeconfig, --context, -n, --as, …) and -o.
type options struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	output    string
	out       io.Writer
}

// Main runs `kubectl podnet` with args (without the program name) and
// returns the process exit code.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The controller-runtime client logs nothing a kubectl user needs, and
	// without a logger it prints a warning with a stack trace instead.
	ctrllog.SetLogger(logr.Discard())
	o := &options{loading: clientcmd.NewDefaultClientConfigLoadingRules(), out: stdout}
	root := &cobra.Command{
		Use:           "kubectl-podnet",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl podnet"},
		Short:         "Explain podnet pods, try requests and policies, list networks and pool usage",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags := root.PersistentFlags()
	flags.StringVar(&o.loading.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file to use")
	clientcmd.BindOverrideFlags(&o.overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	flags.StringVarP(&o.output, "output", "o", "", "output format: json or yaml (default: text)")
	root.AddCommand(o.explainCommand(), o.canICommand(), o.networksCommand(), o.poolsCommand(), o.policyCommand(), o.versionCommand())
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return ee.code // the answer is on stdout already
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	if ee != nil {
		return ee.code
	}
	return 1
}

// connect validates -o and returns a client and the namespace the flags
// and the kubeconfig's context name.
func (o *options) connect() (client.Client, string, error) {
	if err := validOutput(o.output); err != nil {
		return nil, "", err
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.loading, &o.overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig namespace: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	if err := mnp.AddToScheme(scheme); err != nil {
		return nil, "", err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return c, ns, nil
}

// print writes v in the -o format, or with text when -o is not set.
func (o *options) print(v any, text func(io.Writer) error) error {
	done, err := printStructured(o.out, o.output, v)
	if done || err != nil {
		return err
	}
	return text(o.out)
}
