package simnode

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
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
	return &Approver{signer: approval.Ed25519Signer{Key: priv}, Verifier: approval.Ed25519Verifier{Key: pub}}, nil
}

// Approve writes on pod (not yet created) a request for network as net1 on
// a bridge with addresses from pool, and the signed approval of profile
// for it, as the webhook would.
func (a *Approver) Approve(pod *corev1.Pod, profile, network, pool string) error {
	request := network
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = v1alpha1.DefaultServiceAccount
	}
	ap := &v1alpha1.Approval{
		Namespace:      pod.Namespace,
		ServiceAccount: sa,
		RequestHash:    v1alpha1.HashRequest(request),
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
	return nil
}
