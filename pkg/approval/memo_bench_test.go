//go:build bench

package approval

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/bench"
)

// TestBenchApprovalMemo times what the agent pays per reconcile of a pod
// to trust its approval: Verify (the signature, the strict decode and its
// canonical check) against a hit of the Memo (a SHA-256 of the annotations,
// the trusted-key check and a copy), on an approval of 4 interfaces, the
// two taking turns. The NRI burst's agent_reconciles_per_pod says how many
// reconciles a pod's start takes.
func TestBenchApprovalMemo(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, v := Ed25519Signer{Key: priv}, Ed25519Verifier{Keys: []ed25519.PublicKey{pub}}
	a := &v1alpha1.Approval{Namespace: "tenant-a", ServiceAccount: "cnf", IssuedAt: issued, RequestHash: HashRequest("data,data,uplink,tagged")}
	for i := range 4 {
		a.Interfaces = append(a.Interfaces, v1alpha1.ApprovedInterface{
			Interface: fmt.Sprintf("net%d", i+1), Network: "data", Profile: "telco-data", Kind: v1alpha1.KindBridge,
			Bridge: "pnbr-data", VLAN: int32(120 + i), MTU: 9000, MAC: fmt.Sprintf("02:00:00:00:00:%02x", i+1),
		})
	}
	payload, sig, err := Sign(s, a)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMemo(4)
	if _, err := m.Verify(v, payload, sig); err != nil {
		t.Fatal(err)
	}
	n := bench.Size(2000, 20)
	var full, hit []time.Duration
	for range n {
		start := time.Now()
		if _, err := Verify(v, payload, sig); err != nil {
			t.Fatal(err)
		}
		full = append(full, time.Since(start))
		start = time.Now()
		if _, err := m.Verify(v, payload, sig); err != nil {
			t.Fatal(err)
		}
		hit = append(hit, time.Since(start))
	}
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	fp, hp := bench.Percentile(full, 0.5), bench.Percentile(hit, 0.5)
	fmt.Printf("BENCH approval_verify_p50 %.1f us\n", us(fp))
	fmt.Printf("BENCH approval_memo_hit_p50 %.1f us\n", us(hp))
	fmt.Printf("BENCH approval_memo_hit_vs_verify_p50 %.3f x\n", float64(hp)/float64(fp))
	fmt.Printf("BENCH approval_payload_bytes %d bytes\n", len(payload))
}
