package cnisocket

import (
	"errors"
	"fmt"
	"net/netip"
	"path"

	"podnet.io/podnet/api/v1alpha1"
)

// DefaultSocket is where the agent listens and the plugin dials unless
// their configuration says otherwise.
const DefaultSocket = v1alpha1.AgentRunDir + "/cni.sock"

// maxRequestBytes bounds a request: four short names and a path.
const maxRequestBytes = 16 << 10

// Request asks the agent to attach a pod's networks inside the sandbox
// the runtime is setting up.
type Request struct {
	// Namespace and Name of the pod (K8S_POD_NAMESPACE, K8S_POD_NAME).
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID of the pod (K8S_POD_UID): required, so that a request names
	// one pod and not whichever pod has the name now.
	UID string `json:"uid,omitempty"`
	// SandboxID is the runtime's sandbox id (CNI_CONTAINERID).
	SandboxID string `json:"sandboxID"`
	// NetNS is the path of the sandbox's network namespace (CNI_NETNS).
	NetNS string `json:"netns"`
	// IPs are the addresses the previous plugins gave the pod's own
	// interface, in the order the runtime reports them as the pod's IPs:
	// the agent writes them as the default network's entry, as it does
	// with CRI's, which the runtime records only once the sandbox is set
	// up. Optional.
	IPs []string `json:"ips,omitempty"`
}

// maxIPs bounds Request.IPs: one address per family and a few more.
const maxIPs = 8

// Response is the agent's answer: an empty Error means the pod's networks
// are ready in the sandbox.
type Response struct {
	Error string `json:"error,omitempty"`
}

// Field limits: a namespace is a DNS label, a pod name a DNS subdomain, a
// UID a UUID (with room), a sandbox id containerd's 64 hex digits (with
// room), a netns path a short absolute path.
const (
	maxNamespace = 63
	maxName      = 253
	maxUID       = 128
	maxSandboxID = 128
	maxNetNS     = 1024
)

// Validate checks that every field a request needs is there, within its
// limit; the netns must be an absolute, clean path.
func (r Request) Validate() error {
	var errs []error
	for _, f := range []struct {
		name, value string
		max         int
	}{
		{"namespace", r.Namespace, maxNamespace}, {"name", r.Name, maxName}, {"uid", r.UID, maxUID},
		{"sandboxID", r.SandboxID, maxSandboxID}, {"netns", r.NetNS, maxNetNS},
	} {
		switch {
		case f.value == "":
			errs = append(errs, fmt.Errorf("%s: must not be empty", f.name))
		case len(f.value) > f.max:
			errs = append(errs, fmt.Errorf("%s: %d bytes, at most %d", f.name, len(f.value), f.max))
		}
	}
	if r.NetNS != "" && (!path.IsAbs(r.NetNS) || path.Clean(r.NetNS) != r.NetNS) {
		errs = append(errs, fmt.Errorf("netns %q: must be an absolute, clean path", r.NetNS))
	}
	if len(r.IPs) > maxIPs {
		errs = append(errs, fmt.Errorf("ips: %d addresses, at most %d", len(r.IPs), maxIPs))
	}
	for i, ip := range r.IPs {
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, fmt.Errorf("ips[%d] %q: not an IP address", i, ip))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("request for pod %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}
