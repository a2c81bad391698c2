package webhook

import (
	"slices"
	"strconv"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/pkg/policy"
)

// NET_RAW is dropped from every container and init container of a pod
// that gets podnet networks, unless all of them allow raw sockets
// (policy.RawSocketsAllowed, the rule the agent checks too). Container
// runtimes grant it by default (containerd's default set holds NET_RAW,
// not NET_ADMIN), and with it a process can open raw and packet sockets
// and send frames with any source MAC and IP on a shared bridge. The
// validating admission policy podnet-no-network-privilege refuses
// ephemeral containers that do not drop it (the webhook does not see
// those).

// planDropNetRaw adds NET_RAW to capabilities.drop of every container and
// init container that does not drop it (or ALL) yet. It must run on the
// pod's own container indices, before any init container is inserted.
// Containers cannot change after CREATE, so it is planned only then. The
// init container named skip is left alone: it is podnet's wait container,
// which drops ALL and is put in place (or replaced) next.
func planDropNetRaw(spec *corev1.PodSpec, skip string) []jsonpatch.JsonPatchOperation {
	ops := planDropIn("/spec/containers", spec.Containers, "")
	return append(ops, planDropIn("/spec/initContainers", spec.InitContainers, skip)...)
}

func planDropIn(base string, containers []corev1.Container, skip string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	for i, c := range containers {
		if skip != "" && c.Name == skip {
			continue
		}
		if suffix, value, _, ok := netRawDrop(c.SecurityContext); ok {
			ops = append(ops, jsonpatch.NewOperation("add", base+"/"+strconv.Itoa(i)+"/securityContext"+suffix, value))
		}
	}
	return ops
}

// withNetRawDropped is containers as planDropIn's ops leave them, computed
// without a JSON round trip: the container named skip is left alone, and
// containers is returned itself when nothing changes. Nothing is shared
// that either side changes.
func withNetRawDropped(containers []corev1.Container, skip string) []corev1.Container {
	var out []corev1.Container
	for i, c := range containers {
		if skip != "" && c.Name == skip {
			continue
		}
		if _, _, after, ok := netRawDrop(c.SecurityContext); ok {
			if out == nil {
				out = slices.Clone(containers)
			}
			out[i].SecurityContext = after
		}
	}
	if out == nil {
		return containers
	}
	return out
}

// netRawDrop is how a container whose security context is sc comes to
// drop NET_RAW, in both forms: the JSON patch op below the container's
// securityContext (the path suffix and the value it adds) and the
// security context the op leaves. ok is false when sc already drops
// NET_RAW (or ALL). sc is not changed.
func netRawDrop(sc *corev1.SecurityContext) (suffix string, value any, after *corev1.SecurityContext, ok bool) {
	drop := []corev1.Capability{policy.CapNetRaw}
	if policy.DropsNetRaw(sc) {
		return "", nil, sc, false
	}
	if sc == nil {
		after = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: drop}}
		return "", after, after, true
	}
	copied := *sc
	if sc.Capabilities == nil {
		copied.Capabilities = &corev1.Capabilities{Drop: drop}
		return "/capabilities", copied.Capabilities, &copied, true
	}
	caps := *sc.Capabilities
	copied.Capabilities = &caps
	if len(sc.Capabilities.Drop) == 0 {
		caps.Drop = drop
		return "/capabilities/drop", drop, &copied, true
	}
	// Clip: appending must not write into the tenant's own array.
	caps.Drop = append(slices.Clip(sc.Capabilities.Drop), policy.CapNetRaw)
	return "/capabilities/drop/-", policy.CapNetRaw, &copied, true
}
