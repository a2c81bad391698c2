//go:build bench

package policy

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/test/bench"
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
	return bench.Percentile(d, 0.50), bench.Percentile(d, 0.99)
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

// measureInterleaved runs each fn n times, taking turns, after a warm-up,
// so that all of them see the same machine load and GC pressure; it
// returns their latencies in the same order.
func measureInterleaved(t *testing.T, n int, fns ...func() error) [][]time.Duration {
	t.Helper()
	for i := 0; i < n/10; i++ {
		for _, fn := range fns {
			if err := fn(); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := make([][]time.Duration, len(fns))
	for j := range out {
		out[j] = make([]time.Duration, n)
	}
	for i := 0; i < n; i++ {
		for j, fn := range fns {
			start := time.Now()
			if err := fn(); err != nil {
				t.Fatal(err)
			}
			out[j][i] = time.Since(start)
		}
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
	// The webhook stamps the issue time before it signs.
	a.IssuedAt = metav1.NewTime(time.Now().Truncate(time.Second))
	denied := Input{Namespace: in.Namespace, Pod: podWith(`[{"name":"data","mtu":9500},{"name":"nope"}]`, "cnf"), Profiles: in.Profiles}
	// The webhook decides from profiles prepared once per change of them
	// (Input.Prepared): that, and not preparing, is its cost per pod.
	prepared := in
	prepared.Prepared = NewProfileSet(in.Profiles)
	unprepared, _ := Decide(in)
	if p, errs := Decide(prepared); len(errs) > 0 || !reflect.DeepEqual(p, unprepared) {
		t.Fatalf("prepared decision %+v differs from %+v: %v", p, unprepared, errs.ToAggregate())
	}
	n := bench.Size(5000, 200)
	runs := measureInterleaved(t, n,
		func() error { // parse + decide + sign with the webhook's file key
			a, errs := Decide(in)
			if len(errs) > 0 {
				return errs.ToAggregate()
			}
			a.IssuedAt = metav1.NewTime(time.Now().Truncate(time.Second))
			_, _, err := approval.Sign(fileSigner, a)
			return err
		},
		func() error { _, errs := Decide(in); return errs.ToAggregate() },
		func() error { _, _, err := approval.Sign(fileSigner, a); return err },
		func() error { _, _, err := approval.Sign(memSigner, a); return err },
		func() error {
			if _, errs := Decide(denied); len(errs) == 0 {
				return fmt.Errorf("not denied")
			}
			return nil
		},
		func() error { // the webhook's path: prepared profiles, decide, sign
			a, errs := Decide(prepared)
			if len(errs) > 0 {
				return errs.ToAggregate()
			}
			a.IssuedAt = metav1.NewTime(time.Now().Truncate(time.Second))
			_, _, err := approval.Sign(fileSigner, a)
			return err
		},
		func() error { _, errs := Decide(prepared); return errs.ToAggregate() },
		func() error { NewProfileSet(in.Profiles); return nil },
	)
	full, decideOnly, signFile, signMem, deny := runs[0], runs[1], runs[2], runs[3], runs[4]
	fullPrepared, decidePrepared, prepare := runs[5], runs[6], runs[7]

	p50, p99 := percentiles(full)
	d50, d99 := percentiles(decideOnly)
	f50, f99 := percentiles(signFile)
	m50, m99 := percentiles(signMem)
	n50, n99 := percentiles(deny)
	// p99 on a shared two-core machine mostly measures the other load;
	// print it next to the figures.
	fmt.Printf("BENCH admission_bench_loadavg_1m %s load\n", bench.LoadAverage())
	fmt.Printf("BENCH admission_decide_p50 %.1f us\n", us(p50))
	fmt.Printf("BENCH admission_decide_p99 %.1f us\n", us(p99))
	fmt.Printf("BENCH admission_policy_only_p50 %.1f us\n", us(d50))
	fmt.Printf("BENCH admission_policy_only_p99 %.1f us\n", us(d99))
	fmt.Printf("BENCH admission_sign_file_key_p50 %.1f us\n", us(f50))
	fmt.Printf("BENCH admission_sign_file_key_p99 %.1f us\n", us(f99))
	fmt.Printf("BENCH admission_sign_memory_key_p50 %.1f us\n", us(m50))
	fmt.Printf("BENCH admission_sign_memory_key_p99 %.1f us\n", us(m99))
	fmt.Printf("BENCH admission_sign_file_vs_memory_ratio %.2f x\n", us(f50)/us(m50))
	fmt.Printf("BENCH admission_policy_share_of_decide %.2f ratio\n", us(d50)/us(p50))
	fmt.Printf("BENCH admission_deny_p50 %.1f us\n", us(n50))
	fmt.Printf("BENCH admission_deny_p99 %.1f us\n", us(n99))
	for _, r := range []struct {
		name string
		took []time.Duration
	}{{"decide_prepared", fullPrepared}, {"policy_prepared", decidePrepared}, {"prepare_profiles", prepare}} {
		p50, p99 := percentiles(r.took)
		fmt.Printf("BENCH admission_%s_p50 %.1f us\n", r.name, us(p50))
		fmt.Printf("BENCH admission_%s_p99 %.1f us\n", r.name, us(p99))
	}
	// Allocations do not move with the machine's load.
	allocs := testing.AllocsPerRun(200, func() { Decide(prepared) })
	fmt.Printf("BENCH admission_policy_prepared_allocs %.0f allocs\n", allocs)
}
