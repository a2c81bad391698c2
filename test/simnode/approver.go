package simnode

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/policy"
)

// Approver plays the webhook's part: it signs approvals with a key of its
// own, which the simulated agents verify with Verifier.
type Approver struct {
	signer   approval.Ed25519Signer
	Verifier approval.Ed25519Verifier
}

// NewApprover makes a fresh key pair.
func NewApprover() (*Approver, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("approval key: %w", err)
	}
	return &Approver{signer: approval.Ed25519Signer{Key: priv}, Verifier: approval.Ed25519Verifier{Keys: []ed25519.PublicKey{pub}}}, nil
}

// Sign signs an approval of the caller's own making, for pods whose
// approval is not Approve's one bridge network.
func (a *Approver) Sign(ap *v1alpha1.Approval) (payload, sig string, err error) {
	return approval.Sign(a.signer, ap)
}

// Approve writes on pod (not yet created) a request for network as net1 on
// a bridge with addresses from pool, and the signed approval of profile
// for it, as the webhook would. The approval is issued now: the pod must be
// created right after, as after a real admission.
func (a *Approver) Approve(pod *corev1.Pod, profile, network, pool string) error {
	request := network
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = v1alpha1.DefaultServiceAccount
	}
	ap := &v1alpha1.Approval{
		Namespace:      pod.Namespace,
		ServiceAccount: sa,
		RequestHash:    approval.HashRequest(request),
		IssuedAt:       metav1.Now(),
		Profiles:       []v1alpha1.ProfileRef{{Name: profile, Generation: 1}},
		Interfaces: []v1alpha1.ApprovedInterface{{
			Interface: "net1", Network: network, Profile: profile, Kind: v1alpha1.KindBridge,
			Bridge: "pnbr-" + network, MTU: 1500, IPAM: &v1alpha1.ApprovedIPAM{Pools: []string{pool}},
		}},
	}
	payload, sig, err := approval.Sign(a.signer, ap)
	if err != nil {
		return fmt.Errorf("sign approval of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[v1alpha1.NetworksAnnotation] = request
	pod.Annotations[v1alpha1.ApprovedAnnotation] = payload
	pod.Annotations[v1alpha1.ApprovedSignatureAnnotation] = sig
	dropNetRaw(pod.Spec.InitContainers)
	dropNetRaw(pod.Spec.Containers)
	return nil
}

// dropNetRaw drops NET_RAW from containers that keep it, as the webhook
// does for a network without raw sockets: the agent refuses pods that
// hold it (policy.ValidatePodPrivilege).
func dropNetRaw(cs []corev1.Container) {
	for i := range cs {
		c := &cs[i]
		if policy.DropsNetRaw(c.SecurityContext) {
			continue
		}
		if c.SecurityContext == nil {
			c.SecurityContext = &corev1.SecurityContext{}
		}
		if c.SecurityContext.Capabilities == nil {
			c.SecurityContext.Capabilities = &corev1.Capabilities{}
		}
		c.SecurityContext.Capabilities.Drop = append(c.SecurityContext.Capabilities.Drop, policy.CapNetRaw)
	}
}

// Grant makes the grant that Approve's approvals stand on, as an admin
// would: namespace opted in, and profile (selecting every opted-in
// namespace) offering network as a bridge with addresses from pool. The
// agents re-check it before they attach.
func Grant(ctx context.Context, c client.Client, namespace, profile, network, pool string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, v1alpha1.EnabledLabel)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Patch(ctx, ns, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("opt namespace %q in: %w", namespace, err)
	}
	p := &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: profile},
		Spec: v1alpha1.NetworkProfileSpec{
			MaxInterfaces: 4,
			Networks: []v1alpha1.Network{{
				Name:   network,
				Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-" + network},
				// Approve's MTU is this default, as a webhook gives it.
				MTU:  &v1alpha1.MTURange{Default: ptr.To[int32](1500)},
				IPAM: &v1alpha1.IPAM{Pools: []string{pool}},
			}},
		},
	}
	if err := c.Create(ctx, p); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create profile %q: %w", profile, err)
	}
	return nil
}
