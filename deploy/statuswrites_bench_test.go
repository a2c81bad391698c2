//go:build bench

package deploy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// TestBenchPodStatusAdmission measures what podnet's admission policies
// cost the API server on the writes every pod of a cluster goes through,
// podnet's pods or not: its creation, its status writes (the kubelet
// writes each pod's status several times as it starts and whenever a
// container or probe changes: the most frequent write of a cluster) and
// its deletion. Every policy whose rules match such a write evaluates on
// it, and each evaluation converts the pod (old and new) for CEL.
//
// In each round the same writes (by a user that is not podnet's agent, on
// pods that are not podnet's) run without podnet's policies and with
// deploy/policies installed. It prints the API server's CPU time per
// write of each kind and the time its validating admission step took per
// write (the API server's apiserver_admission_step_admission_duration_seconds),
// medians of the rounds. The CPU time includes everything else the API
// server did meanwhile and varies from run to run by more than the
// policies' share; the admission step is that share alone.
func TestBenchPodStatusAdmission(t *testing.T) {
	pods := bench.Size(200, 5)
	statusWrites := bench.Size(2000, 50)
	rounds := bench.Size(3, 1)
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	admin := env.Client
	for _, ns := range []string{"podnet-system", "t1"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	probe := plainPod("probe")
	if err := admin.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	policies := build(t, "policies")

	arms := []string{"without_policies", "podnet_policies"}
	kinds := []string{"create", "status_write", "delete"}
	cpu := map[string][]float64{} // by kind and arm
	admission := map[string][]float64{}
	for round := 1; round <= rounds; round++ {
		for _, arm := range arms {
			setPolicies(t, env, policies, arm == "podnet_policies", probe)
			var targets []*corev1.Pod
			for i := range pods {
				targets = append(targets, plainPod(fmt.Sprintf("%s-%d-%d", strings.ReplaceAll(arm, "_", "-"), round, i)))
			}
			writes := map[string]func(){
				"create": func() {
					parallel(t, len(targets), func(i int) error { return admin.Create(ctx, targets[i]) })
				},
				"status_write": func() {
					parallel(t, statusWrites, func(i int) error { return writeStatus(ctx, admin, targets[i%len(targets)], i) })
				},
				"delete": func() {
					parallel(t, len(targets), func(i int) error { return admin.Delete(ctx, targets[i]) })
				},
			}
			counts := map[string]int{"create": pods, "status_write": statusWrites, "delete": pods}
			operations := map[string]string{"create": "CREATE", "status_write": "UPDATE", "delete": "DELETE"}
			for _, kind := range kinds {
				before := env.Metrics(t)
				writes[kind]()
				after := env.Metrics(t)
				n := float64(counts[kind])
				key := kind + "_" + arm
				cpu[key] = append(cpu[key], (bench.MustGauge(t, after, "process_cpu_seconds_total")-bench.MustGauge(t, before, "process_cpu_seconds_total"))*1000/n)
				validate := func(m string) float64 {
					return bench.Sum(m, "apiserver_admission_step_admission_duration_seconds_sum", `type="validate"`, `operation="`+operations[kind]+`"`)
				}
				admission[key] = append(admission[key], (validate(after)-validate(before))*1e6/n)
				fmt.Printf("BENCH pod_status_admission_round%d_apiserver_cpu_per_%s_%s %.3f ms\n", round, kind, arm, cpu[key][round-1])
			}
		}
	}
	for _, kind := range kinds {
		for _, arm := range arms {
			fmt.Printf("BENCH pod_status_admission_apiserver_cpu_per_%s_%s %.3f ms\n", kind, arm, bench.Percentile(cpu[kind+"_"+arm], 0.5))
		}
		fmt.Printf("BENCH pod_status_admission_apiserver_cpu_per_%s_ratio_podnet_vs_without %.2f x\n", kind,
			bench.Percentile(cpu[kind+"_podnet_policies"], 0.5)/bench.Percentile(cpu[kind+"_without_policies"], 0.5))
		for _, arm := range arms {
			fmt.Printf("BENCH pod_status_admission_validating_admission_per_%s_%s %.1f us\n", kind, arm, bench.Percentile(admission[kind+"_"+arm], 0.5))
		}
	}
}

// plainPod is a pod that is not podnet's, bound to a node.
func plainPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: name},
		Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
}

// setPolicies installs or removes podnet's policies, and waits until the
// API server enforces what it was told: an admin's status write adding a
// podnet.io/ annotation (a dry run) is refused with them and accepted
// without.
func setPolicies(t *testing.T, env *testenv.Env, policies []unstructured.Unstructured, on bool, probe *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	for _, o := range policies {
		o := o.DeepCopy()
		var err error
		if on {
			err = client.IgnoreAlreadyExists(env.Client.Create(ctx, o))
		} else {
			err = client.IgnoreNotFound(env.Client.Delete(ctx, o))
		}
		if err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	testenv.Eventually(t, time.Minute, fmt.Sprintf("policies enforced: %v", on), func(ctx context.Context) error {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"podnet.io/probe":"x"}}}`))
		err := env.Client.Status().Patch(ctx, probe.DeepCopy(), patch, client.DryRunAll)
		if refused := err != nil; refused != on {
			return fmt.Errorf("status write with a podnet.io/ annotation: %v", err)
		}
		return nil
	})
}

// parallel runs write(0..n-1) from 4 writers at once, as the kubelets
// and controllers of a node do.
func parallel(t *testing.T, n int, write func(i int) error) {
	t.Helper()
	const writers = 4
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				if err := write(i); err != nil {
					errs[w] = fmt.Errorf("write %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// writeStatus writes a condition's time into the pod's status, as the
// kubelet does.
func writeStatus(ctx context.Context, c client.Client, p *corev1.Pod, i int) error {
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"PodScheduled","status":"True","lastProbeTime":%q}]}}`,
		time.Now().UTC().Add(time.Duration(i)*time.Second).Format(time.RFC3339))
	return c.Status().Patch(ctx, p.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
}
