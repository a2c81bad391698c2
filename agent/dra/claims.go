package dra

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/agent/podstate"
	"podnet.io/podnet/api/v1alpha1"
)

// ClaimVerifier returns the approval the webhook signed onto a
// ResourceClaim, after checking its signature and that it was issued for
// that claim (pkg/approval).
type ClaimVerifier func(claim *resourceapi.ResourceClaim) (*v1alpha1.Approval, error)

// ClaimNetworks are the networks pods get through ResourceClaims of
// podnet's DRA driver: the kubelet plugin hands it each claim it prepares
// on this node (Prepare), before the pod's sandbox exists, and the pod's
// attach then builds the claim's interfaces with the pod's own (Approval).
// It remembers only the claims prepared on this node, so an agent never
// watches the claims of the cluster.
type ClaimNetworks struct {
	Verify ClaimVerifier

	once   sync.Once
	mu     sync.Mutex
	claims map[types.UID]*VerifiedClaim
	events chan crevent.GenericEvent
}

// VerifiedClaim is a verified claim and the pods it is reserved for.
type VerifiedClaim struct {
	ref      ClaimRef
	approval *v1alpha1.Approval
	// devices[i] is the allocated device of approval.Interfaces[i].
	devices []ClaimDevice
	pods    []podstate.Ref
	// written is the last status body applied.
	written string
}

// ClaimRef names a ResourceClaim, with its UID.
type ClaimRef struct {
	Namespace, Name string
	UID             types.UID
}

// ClaimDevice is one allocated device of podnet's driver; NIC is the
// node NIC a hostDevice network's device stands for.
type ClaimDevice struct {
	Request, Pool, Device string
	NIC                   string
}

func (c *ClaimNetworks) init() {
	c.once.Do(func() {
		c.claims = map[types.UID]*VerifiedClaim{}
		c.events = make(chan crevent.GenericEvent, 1024)
	})
}

// Prepare verifies the claim's approval and remembers its interfaces for
// the pods it is reserved for, whose attach it then wakes. A claim
// without a valid approval for exactly its podnet devices is refused, so
// the kubelet never starts its pod.
func (c *ClaimNetworks) Prepare(claim *resourceapi.ResourceClaim) error {
	c.init()
	name := claim.Namespace + "/" + claim.Name
	if c.Verify == nil {
		return fmt.Errorf("resource claim %s: the agent has no approval check configured", name)
	}
	a, err := c.Verify(claim)
	if err != nil {
		// The check names the claim.
		return err
	}
	devices, err := claimDevices(claim, a)
	if err != nil {
		return fmt.Errorf("resource claim %s: %w", name, err)
	}
	p := &VerifiedClaim{ref: ClaimRef{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
		approval: a, devices: devices, pods: reservedPods(claim)}
	c.mu.Lock()
	c.claims[claim.UID] = p
	c.mu.Unlock()
	c.wake(p.pods)
	return nil
}

// Unprepare forgets a claim: its pods' next attach detaches its
// interfaces and releases their addresses.
func (c *ClaimNetworks) Unprepare(uid types.UID) {
	c.init()
	c.mu.Lock()
	p := c.claims[uid]
	delete(c.claims, uid)
	c.mu.Unlock()
	if p != nil {
		c.wake(p.pods)
	}
}

// Preparer is c as the kubelet plugin's ClaimPreparer.
func (c *ClaimNetworks) Preparer() ClaimPreparer { return preparer{c} }

type preparer struct{ c *ClaimNetworks }

func (p preparer) Prepare(_ context.Context, pc PreparedClaim) error { return p.c.Prepare(pc.Claim) }

func (p preparer) Unprepare(_ context.Context, uid types.UID) error {
	p.c.Unprepare(uid)
	return nil
}

// forPod returns the prepared claims reserved for the pod, in a stable
// order (the pod's own order of claims is not known here: by name).
func (c *ClaimNetworks) forPod(uid types.UID) []*VerifiedClaim {
	if c == nil {
		return nil
	}
	c.init()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*VerifiedClaim
	for _, p := range c.claims {
		for _, ref := range p.pods {
			if types.UID(ref.UID) == uid {
				out = append(out, p)
				break
			}
		}
	}
	sortClaims(out)
	return out
}

// Has reports whether any prepared claim is reserved for the pod.
func (c *ClaimNetworks) Has(uid types.UID) bool { return len(c.forPod(uid)) > 0 }

// Grants reports whether a prepared claim of the pod was approved
// through profile: a change of that profile re-judges the pod.
func (c *ClaimNetworks) Grants(uid types.UID, profile string) bool {
	for _, p := range c.forPod(uid) {
		if slices.ContainsFunc(p.approval.Profiles, func(r v1alpha1.ProfileRef) bool { return r.Name == profile }) {
			return true
		}
	}
	return false
}

// wake enqueues the pods' reconciles.
func (c *ClaimNetworks) wake(pods []podstate.Ref) {
	for _, ref := range pods {
		c.events <- crevent.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}}
	}
}

// Source feeds the controller the pods whose claims were prepared or
// unprepared, ahead of its other work: their sandbox is about to wait on
// them.
func (c *ClaimNetworks) Source() source.Source {
	c.init()
	return source.Channel(c.events, podstate.Urgent())
}

// reservedPods are the pods a claim is reserved for (status.reservedFor).
func reservedPods(claim *resourceapi.ResourceClaim) []podstate.Ref {
	var out []podstate.Ref
	for _, r := range claim.Status.ReservedFor {
		if r.APIGroup == "" && r.Resource == "pods" {
			out = append(out, podstate.Ref{Namespace: claim.Namespace, Name: r.Name, UID: string(r.UID)})
		}
	}
	return out
}

// Approve is the approval a pod's attach executes, the one rule of the
// reconciler and the sandbox-setup paths: its own, verified by v, and
// those of its prepared claims after it (withClaims), with those claims.
// A pod that asks nothing by annotation needs no approval of its own. A
// nil ClaimNetworks holds no claims.
func (c *ClaimNetworks) Approve(v podstate.Verifier, pod *corev1.Pod) (*v1alpha1.Approval, []*VerifiedClaim, error) {
	claims := c.forPod(pod.UID)
	var own *v1alpha1.Approval
	if len(claims) == 0 || pod.Annotations[v1alpha1.NetworksAnnotation] != "" || pod.Annotations[v1alpha1.ApprovedAnnotation] != "" {
		a, err := v.Verify(pod)
		if err != nil {
			return nil, nil, err
		}
		own = a
	}
	a, err := withClaims(pod, own, claims)
	return a, claims, err
}

// PodVerifier is v with the pod's prepared claims merged in (Approve):
// what the sandbox-setup paths check before they hold a sandbox.
func (c *ClaimNetworks) PodVerifier(v podstate.Verifier) podstate.Verifier {
	return podVerifier{claims: c, own: v}
}

type podVerifier struct {
	claims *ClaimNetworks
	own    podstate.Verifier
}

func (p podVerifier) Verify(pod *corev1.Pod) (*v1alpha1.Approval, error) {
	a, _, err := p.claims.Approve(p.own, pod)
	return a, err
}

// Claimed reports whether a pod (by UID) has a prepared claim of podnet's
// driver: the sandbox-setup paths hold it like a pod with an approval.
func (c *ClaimNetworks) Claimed(uid string) bool { return c.Has(types.UID(uid)) }

// needsWrite reports whether body differs from the claim's last written
// status.
func (c *ClaimNetworks) needsWrite(p *VerifiedClaim, body []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return p.written != string(body)
}

// wrote remembers the claim's last written status.
func (c *ClaimNetworks) wrote(p *VerifiedClaim, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p.written = string(body)
}
