package cniplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/cnisocket"
)

// PodAnnotationsCapability is the runtime config key under which the
// runtime passes the pod's annotations to plugins that declare it.
const PodAnnotationsCapability = "io.kubernetes.cri.pod-annotations"

// DefaultTimeout is how long ADD waits for the agent: long enough for a
// burst on a busy node, short enough that a stuck agent shows up as a
// failed sandbox the kubelet retries.
const DefaultTimeout = 2 * time.Minute

// maxTimeout bounds the configured timeout below the agent's own bound on
// a request (cnisocket.DefaultMaxWait).
const maxTimeout = cnisocket.DefaultMaxWait

// Versions are the CNI versions supported: those with prevResult.
var Versions = version.PluginSupports("0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")

// Config is the plugin's entry in the conflist, as the runtime hands it.
type Config struct {
	types.PluginConf
	// Socket is the agent's socket; empty means cnisocket.DefaultSocket.
	Socket string `json:"socket,omitempty"`
	// Timeout is how long ADD waits for the agent, as a Go duration;
	// empty means DefaultTimeout.
	Timeout       string `json:"timeout,omitempty"`
	RuntimeConfig struct {
		PodAnnotations map[string]string `json:"io.kubernetes.cri.pod-annotations,omitempty"`
	} `json:"runtimeConfig"`
}

// podArgs are the kubelet's CNI_ARGS.
type podArgs struct {
	types.CommonArgs
	K8S_POD_NAMESPACE types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_NAME      types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_UID       types.UnmarshallableString //nolint:revive // CNI_ARGS key
}

// Plugin runs the CNI commands. Call reaches the agent (cnisocket.Call
// in the binary); Out receives the result (stdout).
type Plugin struct {
	Call func(ctx context.Context, socket string, req cnisocket.Request) error
	Out  io.Writer
}

// Funcs are the plugin's commands for skel.
func (p Plugin) Funcs() skel.CNIFuncs {
	ok := func(*skel.CmdArgs) error { return nil }
	return skel.CNIFuncs{Add: p.Add, Del: ok, Check: ok, GC: ok, Status: ok}
}

// Add holds the sandbox until the agent attached the pod's networks, for
// pods with a podnet approval; it passes every other pod through.
func (p Plugin) Add(args *skel.CmdArgs) error {
	conf, timeout, err := parseConfig(args.StdinData)
	if err != nil {
		return err
	}
	res, err := conf.PrevResult.GetAsVersion(conf.CNIVersion)
	if err != nil {
		return types.NewError(types.ErrIncompatibleCNIVersion, "podnet: previous result", err.Error())
	}
	if NeedsAgent(conf.RuntimeConfig.PodAnnotations) {
		req, err := request(args)
		if err != nil {
			return err
		}
		if req.IPs, err = podIPs(conf.PrevResult, args.IfName); err != nil {
			return types.NewError(types.ErrIncompatibleCNIVersion, "podnet: previous result", err.Error())
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := p.Call(ctx, socketOf(conf), req); err != nil {
			return types.NewError(types.ErrTryAgainLater, "podnet networks not attached", err.Error())
		}
	}
	return res.PrintTo(p.Out)
}

// podIPs are the addresses of the pod's own interface (ifName, inside
// the sandbox) in prev, in the order the runtime reports them as the
// pod's IPs: containerd takes the first IPv4 address as the primary and
// the others after it, in the result's order. Addresses not tied to an
// interface of the sandbox are not the pod's.
func podIPs(prev types.Result, ifName string) ([]string, error) {
	r, err := prev.GetAsVersion(current.ImplementedSpecVersion)
	if err != nil {
		return nil, err
	}
	res := r.(*current.Result)
	var ips []string
	primary := -1
	for _, ip := range res.IPs {
		if ip.Interface == nil || *ip.Interface < 0 || *ip.Interface >= len(res.Interfaces) {
			continue
		}
		if i := res.Interfaces[*ip.Interface]; i.Sandbox == "" || i.Name != ifName {
			continue
		}
		if primary < 0 && ip.Address.IP.To4() != nil {
			primary = len(ips)
		}
		ips = append(ips, ip.Address.IP.String())
	}
	if primary > 0 {
		first := ips[primary]
		ips = slices.Insert(slices.Delete(ips, primary, primary+1), 0, first)
	}
	return ips, nil
}

// NeedsAgent reports whether a pod with these annotations waits for the
// agent: only pods the webhook approved networks for.
func NeedsAgent(annotations map[string]string) bool {
	return annotations[v1alpha1.ApprovedAnnotation] != ""
}

// parseConfig reads the plugin's configuration; a chained plugin needs
// the previous plugin's result.
func parseConfig(stdin []byte) (*Config, time.Duration, error) {
	var conf Config
	if err := json.Unmarshal(stdin, &conf); err != nil {
		return nil, 0, types.NewError(types.ErrDecodingFailure, "podnet: parse network configuration", err.Error())
	}
	if err := version.ParsePrevResult(&conf.PluginConf); err != nil {
		return nil, 0, types.NewError(types.ErrDecodingFailure, "podnet: parse prevResult", err.Error())
	}
	if conf.PrevResult == nil {
		return nil, 0, types.NewError(types.ErrInvalidNetworkConfig, "podnet: no prevResult",
			"podnet is a chained plugin: list it after the plugin that sets up the pod's interface")
	}
	timeout := DefaultTimeout
	if conf.Timeout != "" {
		d, err := time.ParseDuration(conf.Timeout)
		if err != nil || d <= 0 || d > maxTimeout {
			return nil, 0, types.NewError(types.ErrInvalidNetworkConfig, "podnet: timeout",
				fmt.Sprintf("timeout %q: must be a Go duration above 0 and at most %s", conf.Timeout, maxTimeout))
		}
		timeout = d
	}
	return &conf, timeout, nil
}

// request is what the agent is asked, from the runtime's CNI variables.
func request(args *skel.CmdArgs) (cnisocket.Request, error) {
	var pa podArgs
	if err := types.LoadArgs(args.Args, &pa); err != nil {
		return cnisocket.Request{}, types.NewError(types.ErrInvalidEnvironmentVariables, "podnet: CNI_ARGS", err.Error())
	}
	req := cnisocket.Request{
		Namespace: string(pa.K8S_POD_NAMESPACE),
		Name:      string(pa.K8S_POD_NAME),
		UID:       string(pa.K8S_POD_UID),
		SandboxID: args.ContainerID,
		NetNS:     args.Netns,
	}
	if err := req.Validate(); err != nil {
		return req, types.NewError(types.ErrInvalidEnvironmentVariables, "podnet: CNI_ARGS", err.Error())
	}
	return req, nil
}

func socketOf(conf *Config) string {
	if conf.Socket == "" {
		return cnisocket.DefaultSocket
	}
	return conf.Socket
}
