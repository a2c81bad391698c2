//go:build bench

package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
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
// cost the API server on a pod status write, the most frequent write of
// a cluster: the kubelet writes each pod's status several times as it
// starts and whenever a container or probe changes, podnet's pods or not.
// Every policy whose rules match pods/status evaluates on each such write,
// and each evaluation converts the pod (old and new) for CEL.
//
// In each round the same status writes (a condition's time, by a user
// that is not podnet's agent, on pods that are not podnet's) run without
// podnet's policies and with deploy/policies installed. It prints the API
// server's CPU time per write and the time validating admission took per
// write, medians of the rounds.
func TestBenchPodStatusAdmission(t *testing.T) {
	pods := bench.Size(50, 5)
	writes := bench.Size(2000, 50)
	rounds := bench.Size(3, 1)
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	admin := env.Client
	for _, ns := range []string{"podnet-system", "t1"} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	var targets []*corev1.Pod
	for i := range pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "plain-" + strconv.Itoa(i)},
			Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		}
		if err := admin.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		targets = append(targets, p)
	}
	policies := build(t, "policies")

	arms := []string{"without_policies", "podnet_policies"}
	perWrite := map[string][]float64{}
	admission := map[string][]float64{}
	for round := 1; round <= rounds; round++ {
		for _, arm := range arms {
			setPolicies(t, env, policies, arm == "podnet_policies", targets[0])
			before := env.Metrics(t)
			cpu0, err := bench.Gauge(before, "process_cpu_seconds_total")
			if err != nil {
				t.Fatal(err)
			}
			writeStatuses(t, admin, targets, writes)
			after := env.Metrics(t)
			cpu1, err := bench.Gauge(after, "process_cpu_seconds_total")
			if err != nil {
				t.Fatal(err)
			}
			n := float64(writes)
			validate := func(m string) float64 {
				return bench.Sum(m, "apiserver_admission_step_admission_duration_seconds_sum", `type="validate"`, `operation="UPDATE"`)
			}
			perWrite[arm] = append(perWrite[arm], (cpu1-cpu0)*1000/n)
			admission[arm] = append(admission[arm], (validate(after)-validate(before))*1e6/n)
			fmt.Printf("BENCH pod_status_admission_round%d_apiserver_cpu_per_write_%s %.3f ms\n", round, arm, perWrite[arm][round-1])
		}
	}
	for _, arm := range arms {
		fmt.Printf("BENCH pod_status_admission_apiserver_cpu_per_write_%s %.3f ms\n", arm, median(perWrite[arm]))
		fmt.Printf("BENCH pod_status_admission_validating_admission_per_write_%s %.1f us\n", arm, median(admission[arm]))
	}
	fmt.Printf("BENCH pod_status_admission_apiserver_cpu_ratio_podnet_vs_without %.2f x\n",
		median(perWrite["podnet_policies"])/median(perWrite["without_policies"]))
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

// writeStatuses writes n pod statuses, round robin over pods, from 4
// writers at once, as kubelets do on a node.
func writeStatuses(t *testing.T, c client.Client, pods []*corev1.Pod, n int) {
	t.Helper()
	const writers = 4
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += writers {
				p := pods[i%len(pods)]
				patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"PodScheduled","status":"True","lastProbeTime":%q}]}}`,
					time.Now().UTC().Add(time.Duration(i)*time.Second).Format(time.RFC3339))
				err := c.Status().Patch(context.Background(), p.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, []byte(patch)))
				if err != nil {
					errs[w] = errors.Join(errs[w], fmt.Errorf("status write %d on %s: %w", i, p.Name, err))
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

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
