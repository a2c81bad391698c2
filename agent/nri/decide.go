package nri

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/containerd/nri/pkg/api"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/api/wait"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/hold"
)

// isPodnetPod says whether the pod carries an approval, so the agent
// attaches networks to it. A pod that only asks for networks without an
// approval gets none.
func isPodnetPod(pod *api.PodSandbox) bool {
	return pod.GetAnnotations()[v1alpha1.ApprovedAnnotation] != ""
}

// heldByNRI says whether the webhook chose NRI to hold the pod: it names
// podnet's plugin in NRI's required-plugins annotation (which a
// ValidatingAdmissionPolicy keeps as the webhook wrote it). A podnet pod
// held another way (the wait init container, the chained CNI plugin) is
// that way's to hold: refusing its containers too would trade the wait
// container's polling for the kubelet's retry backoff.
func heldByNRI(pod *api.PodSandbox) bool {
	return hold.ByNRI(pod.GetAnnotations())
}

// netNSPath is the pod's network namespace as the runtime reports it to
// NRI, or "" and the agent takes the runtime's CRI record of the sandbox: a
// containerd 2 that restarted recovers sandboxes without their spec and
// names no namespace. The sandbox's pid is no substitute: the agent does
// not share the node's PID namespace, so /proc/<pid> there is not the
// sandbox's process.
func netNSPath(pod *api.PodSandbox) string {
	for _, ns := range pod.GetLinux().GetNamespaces() {
		if ns.GetType() == "network" && ns.GetPath() != "" {
			return ns.GetPath()
		}
	}
	return ""
}

// request is the sandbox attach request NRI's view of the sandbox makes,
// the same one the chained CNI plugin sends.
func request(pod *api.PodSandbox) cnisocket.Request {
	return cnisocket.Request{
		Namespace: pod.GetNamespace(), Name: pod.GetName(), UID: pod.GetUid(),
		SandboxID: pod.GetId(), NetNS: netNSPath(pod), IPs: slices.Clone(pod.GetIps()),
	}
}

// missingInterfaces are the approved interfaces not present, in the
// approval's order.
func missingInterfaces(approved []string, present map[string]bool) []string {
	var missing []string
	for _, name := range approved {
		if !present[name] {
			missing = append(missing, name)
		}
	}
	return missing
}

// pendingError is admit's answer while the sandbox's attach is under way:
// the refusal, and the attach a wait hook would wait for (its approved
// interfaces) or a refusal asks to try again.
type pendingError struct {
	att Attach
	err error
}

func (e *pendingError) Error() string { return e.err.Error() }
func (e *pendingError) Unwrap() error { return e.err }

// hookMargin is how long past the wait's own timeout the runtime lets the
// hook run before killing it (the OCI hook's timeout, in whole seconds).
const hookMargin = 5 * time.Second

// hookAdjustment is the container adjustment that adds the wait hook at
// path (podnet-wait on the node) as an OCI createRuntime hook: the runtime
// runs it once the container's namespaces exist and creates the container
// only if it exits 0, once every interface is up in the pod's netns
// (podwait.RunHook, run by podnet-wait).
func hookAdjustment(path string, interfaces []string, timeout time.Duration) *api.ContainerAdjustment {
	adj := &api.ContainerAdjustment{}
	t := int64((timeout + hookMargin + time.Second - 1) / time.Second)
	adj.AddHooks(&api.Hooks{CreateRuntime: []*api.Hook{{
		Path:    path,
		Args:    []string{path, wait.HookCommand, "--" + wait.InterfacesFlag, strings.Join(interfaces, ","), "--" + wait.TimeoutFlag, timeout.String()},
		Timeout: &api.OptionalInt{Value: t},
	}}})
	return adj
}

// errNotReady is what every refusal of a container wraps.
var errNotReady = errors.New("podnet networks not ready")

// refusal is the error a container of the pod is refused with: the pod,
// the container, the interfaces missing from its netns (none when the
// approval's are not known yet) and, when there is one, why the attach has
// not made them.
func refusal(pod *api.PodSandbox, container string, missing []string, why error) error {
	msg := fmt.Sprintf("pod %s/%s container %q: %v", pod.GetNamespace(), pod.GetName(), container, errNotReady)
	if len(missing) > 0 {
		msg += fmt.Sprintf(": interface(s) %s missing in netns %q", strings.Join(missing, ", "), netNSPath(pod))
	}
	if why != nil {
		return fmt.Errorf("%s: %w", msg, why)
	}
	return fmt.Errorf("%s: %w", msg, errNotReady)
}
