package agent

import (
	corev1 "k8s.io/api/core/v1"
)

// TrimPod is the pod informer's transform: it keeps what the agent reads
// of a pod and drops the rest, which in a real cluster is most of a pod's
// memory (images, commands, environment, resources, probes, volume sources,
// the kubelet's container statuses). It keeps
//   - the metadata, without managedFields (approvals, the network-status,
//     the owner a persistent network's claims are reserved for);
//   - of the spec the node, hostNetwork, the service account (the approval
//     binds it), the restart policy and the readiness gates;
//   - of each container, init and ephemeral container its name, security
//     context and restart policy (policy.ValidatePodPrivilege, the hold
//     mode, the unheld restarts), in their places;
//   - of each volume its name and hostPath, in its place (a pod may not
//     mount the agent's folder);
//   - of the status the phase, the conditions and the pod IPs.
//
// A pod is only ever patched by the agent, never written back whole, so
// what is dropped here is never lost on the API server.
func TrimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		// Deletion tombstones pass through unchanged.
		return obj, nil
	}
	out := &corev1.Pod{
		TypeMeta:   p.TypeMeta,
		ObjectMeta: p.ObjectMeta,
		Spec: corev1.PodSpec{
			NodeName:            p.Spec.NodeName,
			HostNetwork:         p.Spec.HostNetwork,
			ServiceAccountName:  p.Spec.ServiceAccountName,
			RestartPolicy:       p.Spec.RestartPolicy,
			ReadinessGates:      p.Spec.ReadinessGates,
			InitContainers:      trimContainers(p.Spec.InitContainers),
			Containers:          trimContainers(p.Spec.Containers),
			EphemeralContainers: trimEphemeral(p.Spec.EphemeralContainers),
			Volumes:             trimVolumes(p.Spec.Volumes),
		},
		Status: corev1.PodStatus{
			Phase:      p.Status.Phase,
			Conditions: p.Status.Conditions,
			PodIPs:     p.Status.PodIPs,
		},
	}
	out.ManagedFields = nil
	return out, nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, SecurityContext: c.SecurityContext, RestartPolicy: c.RestartPolicy}
	}
	return out
}

func trimEphemeral(cs []corev1.EphemeralContainer) []corev1.EphemeralContainer {
	if cs == nil {
		return nil
	}
	out := make([]corev1.EphemeralContainer, len(cs))
	for i, c := range cs {
		out[i].Name, out[i].SecurityContext, out[i].RestartPolicy = c.Name, c.SecurityContext, c.RestartPolicy
	}
	return out
}

func trimVolumes(vs []corev1.Volume) []corev1.Volume {
	if vs == nil {
		return nil
	}
	out := make([]corev1.Volume, len(vs))
	for i, v := range vs {
		out[i] = corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{HostPath: v.HostPath}}
	}
	return out
}
