package webhook

import (
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
	drop := []corev1.Capability{policy.CapNetRaw}
	for i, c := range containers {
		sc := c.SecurityContext
		path := base + "/" + strconv.Itoa(i) + "/securityContext"
		switch {
		case skip != "" && c.Name == skip:
		case policy.DropsNetRaw(sc):
		case sc == nil:
			ops = append(ops, jsonpatch.NewOperation("add", path, &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: drop}}))
		case sc.Capabilities == nil:
			ops = append(ops, jsonpatch.NewOperation("add", path+"/capabilities", &corev1.Capabilities{Drop: drop}))
		case len(sc.Capabilities.Drop) == 0:
			ops = append(ops, jsonpatch.NewOperation("add", path+"/capabilities/drop", drop))
		default:
			ops = append(ops, jsonpatch.NewOperation("add", path+"/capabilities/drop/-", policy.CapNetRaw))
		}
	}
	return ops
}
