//go:build bench

package policy

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/certs"
	"podnet.io/podnet/pkg/approval"
)

// benchProfiles returns 100 profiles: 96 for other tenants and the four
// test profiles that select the pod's namespace, so selection, combination
// and checks all do real work.
func benchProfiles() []v1alpha1.NetworkProfile {
	var out []v1alpha1.NetworkProfile
	for i := 0; i < 96; i++ {
		p := telcoData()
		p.Name = fmt.Sprintf("tenant-%02d", i)
		p.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"tenant": fmt.Sprintf("t%02d", i)}}
		out = append(out, p)
	}
	twin := telcoData()
	twin.Name = "telco-data-twin"
	return append(out, telcoData(), twin, telcoUplink(), otherTenant())
}

// benchRequest asks for 4 networks with static addresses, MACs, VLANs and
// routes, so every check runs.
const benchRequest = `[` +
	`{"name":"data","interface":"dp0","ips":["192.168.100.7/24","fd00:100::7/64"],"mac":"02:00:00:00:00:07","mtu":9000,"vlan":120,"routes":[{"dst":"10.50.0.0/16"},{"dst":"fd50::/48"}]},` +
	`{"name":"data","ips":["192.168.100.8/24"],"vlan":121,"routes":[{"dst":"10.50.1.0/24","gateway":"192.168.100.254"}]},` +
	`{"name":"uplink"},` +
	`{"name":"tagged","vlan":305}]`

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

// measure runs fn n times after a warm-up and returns its latencies.
func measure(t *testing.T, n int, fn func() error) []time.Duration {
	t.Helper()
	for i := 0; i < n/10; i++ {
		if err := fn(); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]time.Duration, n)
	for i := range out {
		start := time.Now()
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		out[i] = time.Since(start)
	}
	return out
}

func TestBenchAdmissionDecide(t *testing.T) {
	dir := t.TempDir()
	if err := certs.GenerateKeyPair(filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")); err != nil {
		t.Fatal(err)
	}
	fileSigner, err := certs.LoadSigner(filepath.Join(dir, "k"))
	if err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	memSigner := approval.Ed25519Signer{Key: priv}
	in := Input{Namespace: telcoNamespace(), Pod: podWith(benchRequest, "cnf"), Profiles: benchProfiles()}
	if len(in.Profiles) != 100 {
		t.Fatalf("%d profiles", len(in.Profiles))
	}
	a, errs := Decide(in)
	if len(errs) > 0 || len(a.Interfaces) != 4 {
		t.Fatalf("bench request not approved with 4 interfaces: %v", errs.ToAggregate())
	}
	const n = 5000
	full := measure(t, n, func() error {
		a, errs := Decide(in)
		if len(errs) > 0 {
			return errs.ToAggregate()
		}
		_, _, err := approval.Sign(fileSigner, a)
		return err
	})
	decideOnly := measure(t, n, func() error {
		_, errs := Decide(in)
		return errs.ToAggregate()
	})
	signFile := measure(t, n, func() error { _, _, err := approval.Sign(fileSigner, a); return err })
	signMem := measure(t, n, func() error { _, _, err := approval.Sign(memSigner, a); return err })
	denied := Input{Namespace: in.Namespace, Pod: podWith(`[{"name":"data","mtu":9500},{"name":"nope"}]`, "cnf"), Profiles: in.Profiles}
	deny := measure(t, n, func() error {
		if _, errs := Decide(denied); len(errs) == 0 {
			return fmt.Errorf("not denied")
		}
		return nil
	})

	p50, p99 := percentiles(full)
	d50, d99 := percentiles(decideOnly)
	f50, _ := percentiles(signFile)
	m50, _ := percentiles(signMem)
	n50, n99 := percentiles(deny)
	fmt.Printf("BENCH admission_decide_p50 %.1f us\n", us(p50))
	fmt.Printf("BENCH admission_decide_p99 %.1f us\n", us(p99))
	fmt.Printf("BENCH admission_policy_only_p50 %.1f us\n", us(d50))
	fmt.Printf("BENCH admission_policy_only_p99 %.1f us\n", us(d99))
	fmt.Printf("BENCH admission_sign_file_key_p50 %.1f us\n", us(f50))
	fmt.Printf("BENCH admission_sign_memory_key_p50 %.1f us\n", us(m50))
	fmt.Printf("BENCH admission_sign_file_vs_memory_ratio %.2f x\n", us(f50)/us(m50))
	fmt.Printf("BENCH admission_policy_share_of_decide %.2f ratio\n", us(d50)/us(p50))
	fmt.Printf("BENCH admission_deny_p50 %.1f us\n", us(n50))
	fmt.Printf("BENCH admission_deny_p99 %.1f us\n", us(n99))
}
