package webhook

import (
	"slices"
	"strconv"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// capNetRaw is dropped from every container and init container of a pod
// that gets podnet networks, unless all of them allow raw sockets. Container runtimes grant it by default
// (containerd's default set holds NET_RAW, not NET_ADMIN), and with it a
// process can open raw and packet sockets and send frames with any source
// MAC and IP on a shared bridge. The validating admission policy
// podnet-no-network-privilege refuses adding it back and ephemeral
// containers that do not drop it (the webhook does not see those).
const capNetRaw corev1.Capability = "NET_RAW"

// dropsNetRawFor says whether the pod of approval a loses NET_RAW: unless
// every podnet network it gets allows raw sockets (allowRawSockets).
func dropsNetRawFor(a *v1alpha1.Approval) bool {
	return len(a.Interfaces) == 0 || slices.ContainsFunc(a.Interfaces, func(i v1alpha1.ApprovedInterface) bool { return !i.RawSockets })
}

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
		sc := c.SecurityContext
		path := base + "/" + strconv.Itoa(i) + "/securityContext"
		switch {
		case skip != "" && c.Name == skip:
		case dropsNetRaw(sc):
		case sc == nil:
			ops = append(ops, jsonpatch.NewOperation("add", path, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{capNetRaw}}}))
		case sc.Capabilities == nil:
			ops = append(ops, jsonpatch.NewOperation("add", path+"/capabilities", &corev1.Capabilities{Drop: []corev1.Capability{capNetRaw}}))
		case len(sc.Capabilities.Drop) == 0:
			ops = append(ops, jsonpatch.NewOperation("add", path+"/capabilities/drop", []corev1.Capability{capNetRaw}))
		default:
			ops = append(ops, jsonpatch.NewOperation("add", path+"/capabilities/drop/-", capNetRaw))
		}
	}
	return ops
}

// dropsNetRaw reports whether a security context drops NET_RAW, by name
// (with or without the CAP_ prefix, in any case, as runtimes accept it) or
// through ALL.
func dropsNetRaw(sc *corev1.SecurityContext) bool {
	if sc == nil || sc.Capabilities == nil {
		return false
	}
	return slices.ContainsFunc(sc.Capabilities.Drop, func(c corev1.Capability) bool {
		name := strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
		return name == string(capNetRaw) || name == "ALL"
	})
}
