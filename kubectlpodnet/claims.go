package kubectlpodnet

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// ClaimExplanation is what explain shows of one ResourceClaim of podnet's
// DRA driver that the pod uses.
type ClaimExplanation struct {
	Name string `json:"name"`
	// Allocated says whether the scheduler allocated its devices.
	Allocated bool `json:"allocated"`
	// Approved is the decoded approval the webhook signed onto the claim.
	Approved      *ApprovalView `json:"approved,omitempty"`
	ApprovalError string        `json:"approvalError,omitempty"`
	// Devices are podnet's entries of status.devices: the network data
	// the agent wrote (KEP-4817).
	Devices []resourceapi.AllocatedDeviceStatus `json:"devices,omitempty"`
}

// podClaimNames are the ResourceClaims a pod uses: those it names and
// those generated for it from templates, as its status records them.
func podClaimNames(p *corev1.Pod) []string {
	var names []string
	seen := map[string]bool{}
	add := func(n *string) {
		if n != nil && *n != "" && !seen[*n] {
			seen[*n] = true
			names = append(names, *n)
		}
	}
	for _, rc := range p.Spec.ResourceClaims {
		add(rc.ResourceClaimName)
	}
	for _, st := range p.Status.ResourceClaimStatuses {
		add(st.ResourceClaimName)
	}
	return names
}

// gatherClaims reads the pod's ResourceClaims and keeps podnet's; a claim
// the caller may not read, or that is gone, is left out.
func gatherClaims(ctx context.Context, c client.Client, p *corev1.Pod) ([]*resourceapi.ResourceClaim, error) {
	var out []*resourceapi.ResourceClaim
	for _, name := range podClaimNames(p) {
		claim := &resourceapi.ResourceClaim{}
		err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: name}, claim)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("resource claim %s/%s: %w", p.Namespace, name, err)
		}
		if isPodnetClaim(claim) {
			out = append(out, claim)
		}
	}
	return out, nil
}

// isPodnetClaim says whether a claim asks podnet's driver for anything:
// it carries podnet's approval, a config for the driver, or a device of
// the driver was allocated to it.
func isPodnetClaim(c *resourceapi.ResourceClaim) bool {
	if _, ok := c.Annotations[v1alpha1.ApprovedAnnotation]; ok {
		return true
	}
	for _, cfg := range c.Spec.Devices.Config {
		if cfg.Opaque != nil && cfg.Opaque.Driver == v1alpha1.DRADriver {
			return true
		}
	}
	if a := c.Status.Allocation; a != nil {
		for _, r := range a.Devices.Results {
			if r.Driver == v1alpha1.DRADriver {
				return true
			}
		}
	}
	return false
}

// explainClaim decodes a claim's approval and keeps podnet's device
// status entries.
func explainClaim(c *resourceapi.ResourceClaim) ClaimExplanation {
	e := ClaimExplanation{Name: c.Name, Allocated: c.Status.Allocation != nil}
	if raw, ok := c.Annotations[v1alpha1.ApprovedAnnotation]; ok {
		a, err := decodeApproval(raw)
		if err != nil {
			e.ApprovalError = err.Error()
		}
		e.Approved = a
	}
	for _, d := range c.Status.Devices {
		if d.Driver == v1alpha1.DRADriver {
			e.Devices = append(e.Devices, d)
		}
	}
	return e
}

// diagnoseClaims names the first claim whose networks cannot come: not
// approved, or approved but not allocated; "" when none.
func diagnoseClaims(f PodFacts, claims []ClaimExplanation) string {
	for _, c := range claims {
		switch {
		case c.ApprovalError != "":
			return fmt.Sprintf("resource claim %q: invalid approval: %s; create the claim again so that the webhook issues a new one", c.Name, c.ApprovalError)
		case c.Approved == nil && !f.NamespaceUnknown && f.NamespaceLabels[v1alpha1.EnabledLabel] != "true":
			return fmt.Sprintf("resource claim %q: namespace %q is not opted in (no label %s=true), so the webhook never judged the claim and the agent refuses to prepare it", c.Name, f.Pod.Namespace, v1alpha1.EnabledLabel)
		case c.Approved == nil:
			return fmt.Sprintf("resource claim %q carries no approval: the webhook did not judge it (created before the namespace was opted in, or while the webhook was bypassed); create it again", c.Name)
		case !c.Allocated:
			return fmt.Sprintf("resource claim %q is not allocated yet: no node's ResourceSlice offers its network (see `kubectl get resourceslices`) or the scheduler has not placed the pod", c.Name)
		}
	}
	return ""
}

// writeClaims prints each claim's approval and network data.
func writeClaims(w io.Writer, claims []ClaimExplanation) {
	for _, c := range claims {
		state := "not allocated"
		if c.Allocated {
			state = "allocated"
		}
		fmt.Fprintf(w, "Claim:      %s (%s)\n", c.Name, state)
		writeApproval(w, Explanation{Approved: c.Approved, ApprovalError: c.ApprovalError})
		if len(c.Devices) == 0 {
			fmt.Fprintln(w, "  network data: <none>")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  DEVICE\tINTERFACE\tIPS\tMAC")
		for _, d := range c.Devices {
			nd := d.NetworkData
			if nd == nil {
				nd = &resourceapi.NetworkDeviceData{}
			}
			fmt.Fprintf(tw, "  %s/%s\t%s\t%s\t%s\n", d.Pool, d.Device, orNone(nd.InterfaceName), orNone(strings.Join(nd.IPs, ",")), orNone(nd.HardwareAddress))
		}
		tw.Flush()
	}
}
