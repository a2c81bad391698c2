package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
)

// An approval assumes that the pod it is for cannot rewrite what it was
// given: no container may configure links, addresses or MACs itself
// (NET_ADMIN), leave its network namespace or mount (SYS_ADMIN), or send
// frames with any source (NET_RAW) on a network that does not allow raw
// sockets; and no container may reach the agent on its node. The webhook
// checks the pod it produced against it, and the agent checks the pod it
// is about to attach, since a pod may carry an approval the webhook never
// judged on that pod.

// CapNetRaw is the capability that raw and packet sockets need. Container
// runtimes grant it by default (containerd's default set holds it, not
// NET_ADMIN), so a container holds it unless it drops it.
const CapNetRaw corev1.Capability = "NET_RAW"

// forbiddenCaps are never held by a podnet pod, whatever its profile says.
var forbiddenCaps = []string{"NET_ADMIN", "SYS_ADMIN", "ALL"}

// ValidatePodPrivilege returns what in the pod's spec breaks the approval's
// assumptions, each error naming the field, the container and the
// capability or path: a container, init or ephemeral container that is
// privileged or adds NET_ADMIN, SYS_ADMIN or ALL; one that holds NET_RAW
// while not every approved network allows raw sockets (RawSocketsAllowed);
// a hostPath volume that reaches the agent's folder (v1alpha1.AgentRunDir).
// None means the spec is what the approval assumes.
func ValidatePodPrivilege(spec *corev1.PodSpec, a *v1alpha1.Approval) field.ErrorList {
	raw := rawSocketsDenial(a)
	p := field.NewPath("spec")
	var errs field.ErrorList
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		errs = append(errs, validateContainerPrivilege(p.Child("initContainers").Index(i), "init container", c.Name, c.SecurityContext, raw)...)
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		errs = append(errs, validateContainerPrivilege(p.Child("containers").Index(i), "container", c.Name, c.SecurityContext, raw)...)
	}
	for i := range spec.EphemeralContainers {
		c := &spec.EphemeralContainers[i]
		errs = append(errs, validateContainerPrivilege(p.Child("ephemeralContainers").Index(i), "ephemeral container", c.Name, c.SecurityContext, raw)...)
	}
	for i, v := range spec.Volumes {
		if v.HostPath != nil && reachesAgentRunDir(v.HostPath.Path) {
			errs = append(errs, field.Invalid(p.Child("volumes").Index(i).Child("hostPath", "path"), v.HostPath.Path,
				fmt.Sprintf("volume %q reaches %s, the podnet agent's folder on the node (its socket attaches networks): a pod with podnet networks may not mount it", v.Name, v1alpha1.AgentRunDir)))
		}
	}
	return errs
}

// RawSocketsAllowed says whether the pod of approval a may keep NET_RAW:
// only when it gets at least one network and every one allows raw
// sockets (allowRawSockets).
func RawSocketsAllowed(a *v1alpha1.Approval) bool {
	return rawSocketsDenial(a) == ""
}

// rawSocketsDenial is why the approval's pod may not hold NET_RAW, or ""
// when it may.
func rawSocketsDenial(a *v1alpha1.Approval) string {
	if a == nil || len(a.Interfaces) == 0 {
		return "the approval grants no network that allows raw sockets"
	}
	for _, ai := range a.Interfaces {
		if !ai.RawSockets {
			return fmt.Sprintf("network %q (interface %s) does not allow raw sockets (allowRawSockets in profile %q)", ai.Network, ai.Interface, ai.Profile)
		}
	}
	return ""
}

// validateContainerPrivilege checks one container's security context; raw
// is why it may not hold NET_RAW ("" when it may).
func validateContainerPrivilege(p *field.Path, kind, name string, sc *corev1.SecurityContext, raw string) field.ErrorList {
	if sc == nil {
		if raw == "" {
			return nil
		}
		return field.ErrorList{field.Required(p.Child("securityContext", "capabilities", "drop"),
			fmt.Sprintf("%s %q holds NET_RAW, which the container runtime grants unless dropped, and %s: drop NET_RAW", kind, name, raw))}
	}
	sp := p.Child("securityContext")
	var errs field.ErrorList
	if sc.Privileged != nil && *sc.Privileged {
		errs = append(errs, field.Invalid(sp.Child("privileged"), true,
			fmt.Sprintf("%s %q runs privileged, which holds every capability: a pod with podnet networks may not", kind, name)))
	}
	var add []corev1.Capability
	if sc.Capabilities != nil {
		add = sc.Capabilities.Add
	}
	for j, c := range add {
		if n := capName(c); slices.Contains(forbiddenCaps, n) {
			errs = append(errs, field.Invalid(sp.Child("capabilities", "add").Index(j), string(c),
				fmt.Sprintf("%s %q adds %s: a pod with podnet networks may not hold NET_ADMIN, SYS_ADMIN or ALL", kind, name, n)))
		} else if n == string(CapNetRaw) && raw != "" {
			errs = append(errs, field.Invalid(sp.Child("capabilities", "add").Index(j), string(c),
				fmt.Sprintf("%s %q adds NET_RAW, and %s", kind, name, raw)))
		}
	}
	if raw != "" && !DropsNetRaw(sc) {
		var drop []corev1.Capability
		if sc.Capabilities != nil {
			drop = sc.Capabilities.Drop
		}
		errs = append(errs, field.Invalid(sp.Child("capabilities", "drop"), capNames(drop),
			fmt.Sprintf("%s %q holds NET_RAW, which the container runtime grants unless dropped, and %s: drop NET_RAW", kind, name, raw)))
	}
	return errs
}

// DropsNetRaw reports whether a security context drops NET_RAW: by that
// name or through ALL, in any case. "CAP_NET_RAW" does not count: the
// runtime prefixes every name with CAP_ (containerd's WithCapabilities),
// so that entry drops nothing.
func DropsNetRaw(sc *corev1.SecurityContext) bool {
	if sc == nil || sc.Capabilities == nil {
		return false
	}
	return slices.ContainsFunc(sc.Capabilities.Drop, func(c corev1.Capability) bool {
		n := strings.ToUpper(string(c))
		return n == string(CapNetRaw) || n == "ALL"
	})
}

// capName is how a capability in capabilities.add is read: in any case,
// with or without the CAP_ prefix. Reading an add generously errs on the
// side of refusing.
func capName(c corev1.Capability) string {
	return strings.TrimPrefix(strings.ToUpper(string(c)), "CAP_")
}

func capNames(cs []corev1.Capability) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = string(c)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// reachesAgentRunDir reports whether a host path is the agent's folder,
// lies below it, or holds it (/, /run). /var/run is /run on the hosts
// Kubernetes runs on. Symbolic links on the node are not followed: the
// Pod Security baseline level forbids hostPath altogether.
func reachesAgentRunDir(p string) bool {
	p = path.Clean("/" + p)
	for _, dir := range []string{v1alpha1.AgentRunDir, "/var" + v1alpha1.AgentRunDir} {
		if p == "/" || p == dir || strings.HasPrefix(p, dir+"/") || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}
