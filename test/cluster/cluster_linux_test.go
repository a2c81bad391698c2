package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/test/testenv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// namePrefix starts the name of every cluster these tests create.
const namePrefix = "pnt"

// TestMain first tears down clusters a killed earlier run of this package
// left behind (their random names would otherwise never come up again).
// Only this package uses the prefix and its tests run one at a time.
func TestMain(m *testing.M) {
	if os.Getuid() == 0 {
		root, err := filepath.Abs("../..")
		if err == nil {
			dirs, _ := filepath.Glob(localcluster.ClusterDir(root, namePrefix+"*"))
			for _, d := range dirs {
				name := filepath.Base(d)
				if err := localcluster.Down(context.Background(), name, root); err != nil {
					fmt.Fprintf(os.Stderr, "tear down leftover cluster %q: %v\n", name, err)
					continue
				}
				os.RemoveAll(d)
			}
		}
	}
	os.Exit(m.Run())
}

func TestRootClusterOneNode(t *testing.T) {
	c, cs := upCluster(t, 1)
	pods := runDeployment(t, c, cs, false)
	for _, p := range pods {
		// exec reaches the pod through apiserver → kubelet → containerd.
		if got := strings.TrimSpace(kubectl(t, c, "exec", p.Name, "--", "hostname")); got != p.Name {
			t.Errorf("exec hostname in pod %s = %q, want %q", p.Name, got, p.Name)
		}
		if got := kubectl(t, c, "logs", p.Name); !strings.Contains(got, "started "+p.Name) {
			t.Errorf("logs of pod %s = %q, want the start line", p.Name, got)
		}
	}
	downAndCheck(t, c, len(pods))
}

// TestRootClusterDownAfterKill kills the runtime and its shims (CRI-O:
// conmons) with SIGKILL while pods run, as a crash or an OOM kill would:
// nobody then unmounts the containers' rootfs (overlay mounts with the
// overlayfs snapshotter) nor the sandboxes' shm, nor releases CRI-O's
// namespace pins, and Down must still leave no mount, process, netns or
// pin behind.
func TestRootClusterDownAfterKill(t *testing.T) {
	c, cs := upCluster(t, 1)
	pods := runDeployment(t, c, cs, false)
	procs, err := c.Processes()
	if err != nil {
		t.Fatal(err)
	}
	// The runtime and what it started detached: containerd's shims,
	// CRI-O's conmons.
	isRuntime := func(p localcluster.Process) bool {
		return strings.HasPrefix(p.Name, "runtime-") || strings.HasPrefix(p.Name, "containerd-shim") || strings.HasPrefix(p.Name, "conmon")
	}
	killed := 0
	for _, p := range procs {
		if !isRuntime(p) || !p.Running() {
			continue
		}
		if err := syscall.Kill(p.PID, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s (pid %d): %v", p.Name, p.PID, err)
		}
		killed++
	}
	// The runtime itself and at least one shim or conmon per pod.
	if killed < 1+len(pods) {
		t.Fatalf("killed %d runtime processes, want the runtime and at least %d shims or conmons: %v", killed, len(pods), procs)
	}
	for _, p := range procs {
		if isRuntime(p) {
			waitNotRunning(t, p)
		}
	}
	t.Logf("killed the runtime and %d shims or conmons", killed-1)
	downAndCheck(t, c, len(pods))
}

func waitNotRunning(t *testing.T, p localcluster.Process) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Running(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s (pid %d) still running 10s after SIGKILL", p.Name, p.PID)
		}
	}
}

func TestRootClusterTwoNodes(t *testing.T) {
	c, cs := upCluster(t, 2)
	pods := runDeployment(t, c, cs, true)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("both pods on node %s, want one per node", pods[0].Spec.NodeName)
	}
	// Each pod pings the other: the packets cross the veth between the
	// two node namespaces.
	for i, p := range pods {
		peer := pods[1-i]
		out := kubectl(t, c, "exec", p.Name, "--", "ping", "-c", "2", "-W", "3", peer.Status.PodIP)
		if !strings.Contains(out, "2 packets received") {
			t.Errorf("ping from %s (%s) to %s (%s on %s): %s", p.Name, p.Spec.NodeName, peer.Name, peer.Status.PodIP, peer.Spec.NodeName, out)
		}
	}
	downAndCheck(t, c, len(pods))
}

// upCluster brings up a cluster with a unique name, torn down at the end
// of the test whatever happens, and imports the busybox image.
func upCluster(t *testing.T, nodes int) (*localcluster.Cluster, *kubernetes.Clientset) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("needs root: the cluster runs kubelet and containerd in its own network namespaces")
	}
	root := repoRoot(t)
	name := namePrefix + strings.ToLower(rand.Text()[:5])
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	// PODNET_E2E_RUNTIME=containerd2 runs the nodes on containerd 2, as
	// it does for the end-to-end suites.
	c, err := localcluster.Up(ctx, localcluster.Options{Name: name, Nodes: nodes, Root: root, Log: testWriter{t}, Runtime: os.Getenv("PODNET_E2E_RUNTIME")})
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	t.Logf("cluster %q with %d node(s) up in %s", name, nodes, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("down in cleanup: %v", err)
		}
	})
	testenv.TearDownBeforeTimeout(t, func() { _ = c.Down(context.Background()) })
	checkNRISockets(t, c)
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != nodes {
		t.Fatalf("%d nodes registered, want %d", len(list.Items), nodes)
	}
	for _, n := range list.Items {
		if !nodeReady(n) {
			t.Fatalf("node %s not Ready: %+v", n.Name, n.Status.Conditions)
		}
	}
	tarball := filepath.Join(root, image.ImagesDir, image.TarballName(image.BusyboxName))
	if err := c.ImportImage(ctx, tarball); err != nil {
		t.Fatal(err)
	}
	return c, cs
}

// repoRoot is the repository root: tests run in their package folder.
func repoRoot(t *testing.T) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// runDeployment runs a 2-replica busybox Deployment (spread over the nodes
// when spread is set) and returns its pods once both are Running.
func runDeployment(t *testing.T, c *localcluster.Cluster, cs *kubernetes.Clientset, spread bool) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	labels := map[string]string{"app": "bb"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bb", Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name:            "bb",
						Image:           image.BusyboxImage,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{"sh", "-c", "echo started $(hostname); exec sleep 3600"},
					}},
				},
			},
		},
	}
	if spread {
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	}
	if _, err := cs.AppsV1().Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running []corev1.Pod
	var last string
	for ctx.Err() == nil {
		list, err := cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=bb"})
		if err == nil {
			running, last = running[:0], ""
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					running = append(running, p)
				}
				last += fmt.Sprintf(" %s=%s", p.Name, p.Status.Phase)
			}
			if len(running) == 2 {
				return running
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("deployment pods not Running in time:%s\n%s", last, kubectl(t, c, "get", "events", "-A"))
	return nil
}

func kubectl(t *testing.T, c *localcluster.Cluster, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(localcluster.BinDir(repoRoot(t)), "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig, "--request-timeout=30s"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// downAndCheck tears the cluster down and checks that nothing of it is
// left: no process it started (nor shim), no mount in its folder, no pod
// netns, no netns or interface carrying its name. A second Down must
// succeed too.
func downAndCheck(t *testing.T, c *localcluster.Cluster, pods int) {
	t.Helper()
	procs, err := c.Processes()
	if err != nil {
		t.Fatal(err)
	}
	podNS := c.PodNetNS()
	if len(podNS) < pods {
		t.Errorf("found %d pod netns of the cluster, want at least %d: %v", len(podNS), pods, podNS)
	}
	mounts, err := c.Mounts()
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) == 0 {
		t.Errorf("no mounts under %s while pods run; the mount check below would prove nothing", c.Dir)
	}
	types, err := c.MountTypes()
	if err != nil {
		t.Fatal(err)
	}
	// With overlayfs every container's rootfs is an overlay mount: each
	// pod has at least its sandbox's and its app container's. CRI-O keeps
	// rootfs in vfs folders and mounts each pod's /dev/shm instead.
	if c.Runtime == localcluster.RuntimeCRIO {
		if types["tmpfs"] < pods {
			t.Errorf("%d tmpfs mounts under %s on CRI-O with %d pods, want at least %d (each pod's shm): %v", types["tmpfs"], c.Dir, pods, pods, types)
		}
	} else if c.Snapshotter == localcluster.SnapshotterOverlayfs && types["overlay"] < 2*pods {
		t.Errorf("%d overlay mounts under %s with the %s snapshotter and %d pods, want at least %d: %v",
			types["overlay"], c.Dir, c.Snapshotter, pods, 2*pods, types)
	}
	t.Logf("snapshotter %s; mounts under the cluster folder by type: %v", c.Snapshotter, types)
	// CRI-O pins each pod's network, ipc and uts namespaces under
	// /var/run, outside the cluster folder.
	pins := c.RuntimePins()
	if c.Runtime == localcluster.RuntimeCRIO && len(pins) < 3*pods {
		t.Errorf("%d namespace pins recorded by CRI-O with %d pods, want at least %d: %v", len(pins), pods, 3*pods, pins)
	}
	start := time.Now()
	if err := c.Down(context.Background()); err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("down in %s (%d processes, %d pod netns, %d mounts before)", time.Since(start).Round(time.Millisecond), len(procs), len(podNS), len(mounts))
	if err := c.Down(context.Background()); err != nil {
		t.Errorf("second down: %v", err)
	}
	for _, p := range procs {
		if p.Running() {
			t.Errorf("process %s (pid %d) still running after down", p.Name, p.PID)
		}
	}
	for _, p := range podNS {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("pod netns %s left after down", p)
		}
	}
	for _, p := range pins {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("namespace pin %s left after down", p)
		}
	}
	if left, err := c.Mounts(); err != nil || len(left) > 0 {
		t.Errorf("mounts left under %s: %v %v", c.Dir, left, err)
	}
	for _, n := range c.Nodes {
		if _, err := os.Lstat(n.NetNS); err == nil {
			t.Errorf("netns %s left after down", n.NetNS)
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if strings.Contains(i.Name, c.Name) {
			t.Errorf("interface %q in the machine's netns", i.Name)
		}
	}
	// Down keeps the logs for a post-mortem; a passing test needs none.
	if !t.Failed() {
		if err := os.RemoveAll(c.Dir); err != nil {
			t.Error(err)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
