package dra

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/dataplane"
)

// claimDevices pairs the claim's allocated devices of podnet's driver,
// in allocation order, with its approval's interfaces, in request order:
// the webhook approves one interface per podnet request, and the
// scheduler allocates one device per request in the same order. A count
// that differs means the approval is not for this allocation.
func claimDevices(claim *resourceapi.ResourceClaim, a *v1alpha1.Approval) ([]ClaimDevice, error) {
	if claim.Status.Allocation == nil {
		return nil, fmt.Errorf("is not allocated")
	}
	var out []ClaimDevice
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == v1alpha1.DRADriver {
			out = append(out, ClaimDevice{Request: r.Request, Pool: r.Pool, Device: r.Device})
		}
	}
	if len(out) != len(a.Interfaces) {
		return nil, fmt.Errorf("%d devices of driver %s allocated, its approval has %d interfaces", len(out), v1alpha1.DRADriver, len(a.Interfaces))
	}
	for i, ifc := range a.Interfaces {
		if ifc.Kind != v1alpha1.KindHostDevice {
			continue
		}
		nic, ok := AllocatedNIC(ifc.Profile, ifc.Network, out[i].Device)
		if !ok {
			return nil, fmt.Errorf("request %q: device %q is not a NIC of network %q of profile %q", out[i].Request, out[i].Device, ifc.Network, ifc.Profile)
		}
		out[i].NIC = nic
	}
	return out, nil
}

// Allocated maps each host-device interface of the claims to the node NIC
// its allocation names (dataplane.Interface.Allocated): the scheduler
// chose it, and the agent takes that one only, once it checked that the
// NIC is free and that the approval's selector still matches it.
func Allocated(claims []*VerifiedClaim) map[string]string {
	out := map[string]string{}
	for _, p := range claims {
		for i, d := range p.devices {
			if d.NIC != "" {
				out[p.approval.Interfaces[i].Interface] = d.NIC
			}
		}
	}
	return out
}

// withClaims is the approval a pod's attach executes: the pod's own (a,
// nil when it asked nothing by annotation) and the interfaces of its
// prepared claims after it, each still checked against the profiles like
// the pod's. Two interfaces of one name refuse the whole pod: neither way
// may shadow the other's interface.
func withClaims(pod *corev1.Pod, a *v1alpha1.Approval, claims []*VerifiedClaim) (*v1alpha1.Approval, error) {
	if len(claims) == 0 {
		return a, nil
	}
	out := &v1alpha1.Approval{Namespace: pod.Namespace, ServiceAccount: serviceAccountOf(pod)}
	if a != nil {
		c := *a
		c.Interfaces = slices.Clone(a.Interfaces)
		c.Profiles = slices.Clone(a.Profiles)
		out = &c
	}
	names := map[string]string{}
	for _, ifc := range out.Interfaces {
		names[ifc.Interface] = "the pod's " + v1alpha1.NetworksAnnotation
	}
	for _, p := range claims {
		if p.approval.Namespace != pod.Namespace {
			return nil, fmt.Errorf("resource claim %s/%s: approved for namespace %q, the pod is in %q", p.ref.Namespace, p.ref.Name, p.approval.Namespace, pod.Namespace)
		}
		for _, ifc := range p.approval.Interfaces {
			if by, taken := names[ifc.Interface]; taken {
				return nil, fmt.Errorf("resource claim %s/%s: interface %q is also asked for by %s", p.ref.Namespace, p.ref.Name, ifc.Interface, by)
			}
			names[ifc.Interface] = "resource claim " + p.ref.Name
			out.Interfaces = append(out.Interfaces, ifc)
		}
		for _, ref := range p.approval.Profiles {
			if !slices.Contains(out.Profiles, ref) {
				out.Profiles = append(out.Profiles, ref)
			}
		}
	}
	return out, nil
}

// serviceAccountOf is the pod's service account as approvals name it.
func serviceAccountOf(pod *corev1.Pod) string {
	if pod.Spec.ServiceAccountName == "" {
		return v1alpha1.DefaultServiceAccount
	}
	return pod.Spec.ServiceAccountName
}

// claimDeviceStatus is the network data (KEP-4817) of a claim's devices
// as the dataplane read them back: interface name, addresses (CIDR, as
// the API asks) and MAC of each device whose interface is in place. A
// device not attached, or no longer granted, is left out rather than
// reported empty.
func claimDeviceStatus(p *VerifiedClaim, built []dataplane.InterfaceStatus) []resourceapi.AllocatedDeviceStatus {
	byIf := map[string]dataplane.InterfaceStatus{}
	for _, s := range built {
		byIf[s.Name] = s
	}
	out := []resourceapi.AllocatedDeviceStatus{}
	for i, d := range p.devices {
		s, ok := byIf[p.approval.Interfaces[i].Interface]
		if !ok {
			continue
		}
		out = append(out, resourceapi.AllocatedDeviceStatus{
			Driver: v1alpha1.DRADriver, Pool: d.Pool, Device: d.Device,
			NetworkData: &resourceapi.NetworkDeviceData{InterfaceName: s.Name, IPs: slices.Clone(s.IPs), HardwareAddress: s.MAC},
		})
	}
	return out
}

// sortClaims orders claims by namespace and name.
func sortClaims(ps []*VerifiedClaim) {
	slices.SortFunc(ps, func(a, b *VerifiedClaim) int {
		return strings.Compare(a.ref.Namespace+"/"+a.ref.Name, b.ref.Namespace+"/"+b.ref.Name)
	})
}
