package webhook

import (
	"maps"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

// holdChange adds to a new pod with interfaces what holds its app until
// they exist, by the entry of the webhook's mode (auto: the cluster's
// choice, see holdauto.go) in hold's table: the wait init container
// (waitInitContainer), NRI's required-plugins annotation naming podnet's
// plugin (nri: a runtime whose default validator is on then refuses the
// pod's containers when the plugin did not process them, agent down, hung
// or restarting, where NRI alone would let them run), or nothing
// (attachAtSandboxSetup: the chained CNI plugin holds the sandbox).
//
// The pod's podnet.io/wait adds or removes the wait container whatever the
// mode; it never removes the annotation, which costs nothing where the
// agent's plugin is connected.
func (h *Handler) holdChange(change *podChange, pod *corev1.Pod, ifaces []string) {
	mode, _ := hold.Of(hold.Resolve(h.Hold, h.AutoHold))
	if injectWait(pod.Annotations[v1alpha1.WaitAnnotation], mode) {
		wait := waitContainer(h.Wait, pod, ifaces)
		change.Wait = &wait
	}
	change.RequirePlugin = mode.RequirePlugin
}

// injectWait decides whether a pod with networks gets the wait init
// container: the pod's podnet.io/wait says so when set, otherwise the
// webhook's mode.
func injectWait(annotation string, mode hold.Mode) bool {
	switch annotation {
	case "true":
		return true
	case "false":
		return false
	}
	return mode.Wait
}

// planRequirePlugin sets the required-plugins annotation to podnet's
// plugin unless it says so already. The pod asks for networks, so its
// annotations exist.
func planRequirePlugin(annotations map[string]string) []jsonpatch.JsonPatchOperation {
	cur, has := annotations[v1alpha1.NRIRequiredPluginsAnnotation]
	switch {
	case !has:
		return []jsonpatch.JsonPatchOperation{{Operation: "add", Path: "/metadata/annotations/" + escapePointer(v1alpha1.NRIRequiredPluginsAnnotation), Value: v1alpha1.NRIRequiredPluginsValue}}
	case cur != v1alpha1.NRIRequiredPluginsValue:
		return []jsonpatch.JsonPatchOperation{{Operation: "replace", Path: "/metadata/annotations/" + escapePointer(v1alpha1.NRIRequiredPluginsAnnotation), Value: v1alpha1.NRIRequiredPluginsValue}}
	}
	return nil
}

// nriAnnotation says whether k is one of the keys NRI reads the required
// plugins from: the key itself, "<key>/pod" and "<key>/container.<name>",
// the most specific first. Anything under the prefix counts, so that no
// spelling NRI may read later slips through.
func nriAnnotation(k string) bool {
	return strings.HasPrefix(k, v1alpha1.NRIRequiredPluginsAnnotation)
}

// validateNRIAnnotations refuses a new pod that sets its own required
// plugins. Under any of NRI's keys, a value of the tenant's (say an empty
// list for one container) would override the one podnet writes, and the
// runtime would run that container without podnet's plugin. The only value
// allowed is podnet's own, under the plain key: what this webhook writes,
// so that a second pass over its own output changes nothing.
func validateNRIAnnotations(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if v := pod.Annotations[k]; !nriAnnotation(k) || (k == v1alpha1.NRIRequiredPluginsAnnotation && v == v1alpha1.NRIRequiredPluginsValue) {
			continue
		}
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k),
			"the runtime's required plugins of a podnet pod are set by podnet's webhook ("+v1alpha1.NRIRequiredPluginsAnnotation+": "+v1alpha1.NRIRequiredPluginsValue+" when pods are held by NRI); remove it"))
	}
	return errs
}

// validateNRIAnnotationsUnchanged refuses an UPDATE that adds, changes or
// removes a required-plugins annotation: the runtime reads them again when
// it recreates the pod's sandbox.
func validateNRIAnnotationsUnchanged(old, pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	check := func(k string) {
		was, had := old.Annotations[k]
		is, has := pod.Annotations[k]
		if nriAnnotation(k) && (had != has || was != is) {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k),
				"the runtime's required plugins of a podnet pod are set by podnet's webhook when the pod is created; leave them as they are"))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(old.Annotations)) {
		check(k)
	}
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if _, had := old.Annotations[k]; !had {
			check(k)
		}
	}
	return errs
}

// tolerateAnnotation says whether k is one of the keys through which NRI's
// default validator lets a pod's containers run without their required
// plugins, under one of the names the runtimes were configured with
// (tolerate_missing_plugins_annotation): the name itself, "<name>/pod" or
// "<name>/container.<container>".
func tolerateAnnotation(k string, names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return k == n || strings.HasPrefix(k, n+"/") })
}

// validateTolerate refuses a podnet pod that carries a key of names (the
// annotations the runtimes' NRI default validator reads to let a pod run
// without its required plugins), whatever its value: its containers would
// run while podnet's plugin is away, without their networks. A new pod
// (old is nil) may carry none; an UPDATE may add, change or remove none,
// as the runtime reads them again when it recreates the sandbox.
func validateTolerate(old, pod *corev1.Pod, names []string) field.ErrorList {
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(pod.Annotations)) {
		if !tolerateAnnotation(k, names) {
			continue
		}
		if old != nil {
			if was, had := old.Annotations[k]; had && was == pod.Annotations[k] {
				continue
			}
		}
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k),
			"the runtime's NRI validator would let this podnet pod's containers run without podnet's plugin, before their networks exist; remove it"))
	}
	if old != nil {
		for _, k := range slices.Sorted(maps.Keys(old.Annotations)) {
			if _, has := pod.Annotations[k]; !has && tolerateAnnotation(k, names) {
				errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(k),
					"the runtime's NRI annotations of a podnet pod stay as the pod was created; leave them as they are"))
			}
		}
	}
	return errs
}
