package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/macpool"
)

// fakeMACs hands out MACs by interface name, or an error.
type fakeMACs struct {
	macs map[string]string
	err  error
	asks []v1alpha1.ApprovedInterface
}

func (f *fakeMACs) EnsureMAC(_ context.Context, _ *corev1.Pod, ai v1alpha1.ApprovedInterface) (string, error) {
	f.asks = append(f.asks, ai)
	return f.macs[ai.Interface], f.err
}

func TestEnsureMACsWritesTheClaimedMACIntoTheApproval(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "p", UID: "u"}}
	rng := &v1alpha1.ApprovedMACRange{Start: "02:00:00:00:00:00", End: "02:00:00:00:00:0f"}
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Network: "pooled", MACRange: rng},
		{Interface: "net2", Network: "plain", MAC: "0a:00:00:00:00:01"},
		{Interface: "net3", Network: "kernel"},
	}}
	f := &fakeMACs{macs: map[string]string{"net1": "02:00:00:00:00:07", "net2": "0a:00:00:00:00:01"}}
	r := &Reconciler{MACs: f}
	if err := r.ensureMACs(context.Background(), pod, a); err != nil {
		t.Fatal(err)
	}
	if a.Interfaces[0].MAC != "02:00:00:00:00:07" || a.Interfaces[1].MAC != "0a:00:00:00:00:01" || a.Interfaces[2].MAC != "" {
		t.Fatalf("MACs %q %q %q", a.Interfaces[0].MAC, a.Interfaces[1].MAC, a.Interfaces[2].MAC)
	}
	// A static MAC is claimed without a range too; a MAC the kernel
	// chooses is not.
	if len(f.asks) != 2 || f.asks[0].Interface != "net1" || f.asks[1].Interface != "net2" {
		t.Fatalf("asked for %+v, want net1 (a range) and net2 (a static MAC)", f.asks)
	}

	over := &macpool.QuotaExceededError{Network: "pooled", Namespace: "t", Max: 2}
	a.Interfaces[0].MAC = ""
	err := (&Reconciler{MACs: &fakeMACs{err: over}}).ensureMACs(context.Background(), pod, a)
	if err == nil || !strings.Contains(err.Error(), `interface "net1" network "pooled"`) || ipamReason(err) != v1alpha1.ReasonQuotaExceeded {
		t.Fatalf("quota error %v (reason %s), want it named and QuotaExceeded", err, ipamReason(err))
	}
	if a.Interfaces[0].MAC != "" {
		t.Fatalf("a failed claim left MAC %q", a.Interfaces[0].MAC)
	}
	if err := (&Reconciler{}).ensureMACs(context.Background(), pod, a); err == nil || !strings.Contains(err.Error(), "no MAC allocator") {
		t.Fatalf("without an allocator: %v", err)
	}
	if ipamReason(errors.New("x")) != v1alpha1.ReasonIPAMFailed {
		t.Fatal("other errors are IPAMFailed")
	}
}

func TestEnsureMACRefusesAStaticMACOutsideTheRange(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "p", UID: "u"}}
	ai := v1alpha1.ApprovedInterface{Interface: "net1", Network: "pooled", MAC: "02:00:00:00:01:00",
		MACRange: &v1alpha1.ApprovedMACRange{Start: "02:00:00:00:00:00", End: "02:00:00:00:00:0f"}}
	_, err := IPAM{MACs: macpool.New(nil, nil)}.EnsureMAC(context.Background(), pod, ai)
	if err == nil || !strings.Contains(err.Error(), "outside the macRange 02:00:00:00:00:00-02:00:00:00:00:0f") {
		t.Fatalf("got %v", err)
	}
}

// TestStaleKeepsTheMACOfALayer2Interface: an interface without addresses
// whose network has a MAC range, or that has a static MAC, keeps its MAC
// claim on every attach.
func TestStaleKeepsTheMACOfALayer2Interface(t *testing.T) {
	had := []attachment{{Network: "macs", Interface: "net1"}, {Network: "l2", Interface: "net2"}, {Network: "static", Interface: "net3"}}
	a := &v1alpha1.Approval{Interfaces: []v1alpha1.ApprovedInterface{
		{Interface: "net1", Network: "macs", MACRange: &v1alpha1.ApprovedMACRange{Start: "02:00:00:00:00:00", End: "02:00:00:00:00:0f"}},
		{Interface: "net2", Network: "l2"},
		{Interface: "net3", Network: "static", MAC: "0a:00:00:00:00:03"},
	}}
	got := stale(had, a)
	if len(got) != 1 || got[0].Network != "l2" {
		t.Fatalf("stale %v, want only l2/net2 (it holds no claim)", got)
	}
}
