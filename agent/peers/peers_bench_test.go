//go:build bench

package peers_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/agent"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

// benchNodes is how many Node objects the heap figure is taken over.
var benchNodes = bench.Size(1000, 20)

// realisticNode is a Node of the size kubelet writes on a real cluster:
// well-known labels, a few annotations, ~30 images, five conditions,
// capacity, node info and a hostname and two InternalIP addresses.
func realisticNode(i int) *corev1.Node {
	name := fmt.Sprintf("node-%04d", i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "m5.2xlarge",
		"topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": "eu-west-1a", "node-role.kubernetes.io/worker": "",
	}, Annotations: map[string]string{
		"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
		"csi.volume.kubernetes.io/nodeid": fmt.Sprintf(`{"ebs.csi.aws.com":"i-%016x"}`, i),
	}}}
	return n
}

func realisticStatus(n *corev1.Node, i int) {
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)},
		{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("fd00::%x", i)},
		{Type: corev1.NodeHostName, Address: n.Name},
	}
	for j := range 30 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("registry.example.com/team/app-%02d@sha256:%064x", j, j), fmt.Sprintf("registry.example.com/team/app-%02d:v1.%d.0", j, j)},
			SizeBytes: int64(50_000_000 + j),
		})
	}
	for _, c := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse,
			Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()})
	}
	n.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}
	n.Status.Allocatable = n.Status.Capacity
	n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: fmt.Sprintf("%032x", i), SystemUUID: fmt.Sprintf("%032x", i), BootID: fmt.Sprintf("%032x", i),
		KernelVersion: "6.1.0-28-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.22",
		KubeletVersion: "v1.35.0", OperatingSystem: "linux", Architecture: "amd64"}
}

// heapOf is the live heap that a synced cache with one Node informer built
// from opts holds.
func heapOf(t *testing.T, env *testenv.Env, opts cache.Options) float64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	opts.Scheme = env.Scheme
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := c.GetInformer(ctx, &corev1.Node{}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil || len(nodes.Items) != benchNodes {
		t.Fatalf("cache holds %d nodes (%v), want %d", len(nodes.Items), err, benchNodes)
	}
	nodes = corev1.NodeList{}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(c)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / (1 << 20)
}

// TestBenchNodeCacheHeap: the heap the agent's Node informer holds for
// 1,000 nodes of realistic size, with the agent's cache options (the peers
// transform) and with the Node informer left untrimmed (managed fields
// stripped only, as the agent's default transform does).
func TestBenchNodeCacheHeap(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < benchNodes; i += 8 {
				n := realisticNode(i)
				if err := env.Client.Create(context.Background(), n); err != nil {
					errs <- err
					return
				}
				realisticStatus(n, i)
				if err := env.Client.Status().Update(context.Background(), n); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	trimmed := agent.CacheOptions("node-0000")
	untrimmed := agent.CacheOptions("node-0000")
	untrimmed.ByObject = map[client.Object]cache.ByObject{}
	// Trimmed first: a cache measured earlier may still be freed during
	// the second measurement, which would understate the second figure.
	tr := heapOf(t, env, trimmed)
	u := heapOf(t, env, untrimmed)
	fmt.Printf("BENCH agent_node_cache_heap_per_1000_nodes_trimmed %.2f MiB\n", tr*1000/float64(benchNodes))
	fmt.Printf("BENCH agent_node_cache_heap_per_1000_nodes_untrimmed %.2f MiB\n", u*1000/float64(benchNodes))
}
