//go:build bench

package burst

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/install"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/podwait"
	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/test/testenv"
)

const appLabel = "burst-app"

// clusterName is the bench cluster's: the e2e slot's (PODNET_E2E_CLUSTER,
// set by the machine's slot holder) when there is one, so that it never
// shares a cluster with a test running beside it.
func clusterName() string {
	if n := os.Getenv("PODNET_E2E_CLUSTER"); n != "" {
		return n
	}
	return "burst"
}

// mode is one way podnet holds a pod until its networks are there; each
// runs on a cluster of its own.
type mode struct {
	name   string // in PODNET_BURST_MODES
	prefix string // of its BENCH lines
	attach bool   // at sandbox setup, through the chained CNI plugin
	kind   startKind
	// deployEnv is what hack/deploy.sh is given to deploy podnet in this
	// mode, beyond what the cluster implies.
	deployEnv []string
	// check fails the bench when podnet was not deployed in this mode.
	check func(t *testing.T, cl *cluster)
	// rounds is how many times each N runs every arm unless
	// PODNET_BURST_ROUNDS says.
	rounds int
}

var modes = []mode{
	{name: "wait", prefix: "burst_", kind: waitContainer, deployEnv: waitDeployEnv, check: checkWaitDeployed, rounds: 1},
	{name: "cni", prefix: "burst_cni_", attach: true, kind: sandboxSetup, rounds: 1},
	// NRI mode's figures are the ones set against targets: three rounds,
	// whose medians are printed.
	{name: "nri", prefix: "burst_nri_", kind: nriSetup, deployEnv: nriDeployEnv, check: checkNRIDeployed, rounds: 3},
}

// defaultModes run when PODNET_BURST_MODES is unset.
var defaultModes = []string{"wait", "nri"}

// modesEnv names the modes to run, comma-separated ("wait", "cni",
// "nri"); unset runs defaultModes.
const modesEnv = "PODNET_BURST_MODES"

// runtimeEnv is the nodes' container runtime (localcluster.Runtime*);
// unset is containerd 2, with NRI on.
const runtimeEnv = "PODNET_BURST_RUNTIME"

const profile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: burst}
spec:
  namespaceSelector: {matchLabels: {tenant: burst}}
  maxInterfaces: 2
  networks:
  - name: b1
    bridge: {name: pnbr-b1}
    ipam: {pools: ["10.201.0.0/16"]}
  - name: b2
    bridge: {name: pnbr-b2}
    ipam: {pools: ["10.202.0.0/16"]}
`

// cluster is the bench's one-node cluster with podnet installed.
type cluster struct {
	c   *localcluster.Cluster
	in  *install.Installer
	cs  kubernetes.Interface
	cri cri.Runtime
	// rt removes the sandboxes of a deleted Deployment (remove).
	rt runtimeapi.RuntimeServiceClient
	// multus is the Multus configuration of each node, by the node's CNI
	// folder, written there for the Multus arms only (useMultus).
	multus   map[string][]byte
	multusOn bool
	// pprofPort is the agent's /debug/pprof port when it serves one
	// (NODE_AGENT_PPROF): the NRI arms are then profiled.
	pprofPort string
}

// TestBenchClusterBurst brings up a one-node local cluster (the 2-CPU
// machine is the node) on containerd 2 with NRI on (PODNET_BURST_RUNTIME
// overrides), installs podnet as `make demo` does and Multus beside it,
// and for N = 30 and 100 (PODNET_BURST_N overrides, e.g. "5") creates a
// Deployment of N busybox pods for each arm in turn: without networks,
// with one podnet network, with one Multus network, with two of each
// (and in NRI mode without networks again, the bench's noise floor), and
// paced without networks and with one podnet network (a pod every 500
// ms);
// each deleted (and its pods gone) and the machine quiet again before
// the next; NRI mode runs every arm three times, in alternating order,
// and prints the medians too. It does so for each
// mode (PODNET_BURST_MODES): the wait init container (burst_ lines),
// attach at sandbox setup (burst_cni_ lines) and, once NRI mode is
// deployable, attach through NRI (burst_nri_ lines), each on a new
// cluster.
func TestBenchClusterBurst(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestBenchClusterBurst runs a local cluster (network namespaces, kubelet): run it as root")
	}
	sizes, err := burstSizes(cmp.Or(os.Getenv("PODNET_BURST_N"), bench.Size("", "2")))
	if err != nil {
		t.Fatal(err)
	}
	run, err := burstModes(os.Getenv(modesEnv))
	if err != nil {
		t.Fatal(err)
	}
	runtime, err := burstRuntime(os.Getenv(runtimeEnv), run)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range run {
		t.Run(m.name, func(t *testing.T) {
			rounds, err := burstRounds(os.Getenv(roundsEnv), bench.Size(m.rounds, 1))
			if err != nil {
				t.Fatal(err)
			}
			vs, err := burstArms(os.Getenv(armsEnv), m.kind)
			if err != nil {
				t.Fatal(err)
			}
			cl := setUp(t, m, runtime)
			if m.kind != nriSetup {
				fmt.Printf("burst: mode %s attaches without NRI: no agent NRI hook figures (podnet_agent_nri_hook_seconds)\n", m.name)
			}
			prefix := m.prefix + runtimePrefix(runtime)
			if runtime != localcluster.RuntimeCRIO {
				fmt.Printf("BENCH %scontainerd_major_version %d version\n", prefix, containerdMajor(runtime))
			}
			fmt.Printf("BENCH %sload_average_at_start %s load\n", prefix, bench.LoadAverage())
			for _, n := range sizes {
				var all []map[string]result
				for round := range rounds {
					res := map[string]result{}
					for _, v := range roundOrder(vs, round) {
						settle(n, round, v)
						res[v.name] = cl.run(t, v, n)
					}
					pfx := fmt.Sprintf("BENCH %sn%d_", prefix, n)
					if rounds > 1 {
						pfx = fmt.Sprintf("BENCH %sn%d_round%d_", prefix, n, round+1)
					}
					report(pfx, n, vs, res)
					all = append(all, res)
				}
				if rounds > 1 {
					reportMedians(os.Stdout, fmt.Sprintf("BENCH %sn%d_median_", prefix, n), vs, all)
				}
			}
			fmt.Printf("BENCH %sload_average_at_end %s load\n", prefix, bench.LoadAverage())
		})
	}
}

func burstModes(env string) ([]mode, error) {
	names := defaultModes
	if env != "" {
		names = strings.Split(env, ",")
	}
	var out []mode
	for _, f := range names {
		i := slices.IndexFunc(modes, func(m mode) bool { return m.name == strings.TrimSpace(f) })
		if i < 0 {
			return nil, fmt.Errorf("%s %q: want a comma-separated list of wait, cni and nri", modesEnv, env)
		}
		out = append(out, modes[i])
	}
	return out, nil
}

// burstRuntime is the nodes' runtime: containerd 2 unless env names
// another; NRI mode needs containerd 2.
func burstRuntime(env string, run []mode) (string, error) {
	rt := env
	if rt == "" {
		rt = localcluster.RuntimeContainerd2
	}
	if _, _, err := localcluster.RuntimeVersions(rt); err != nil {
		return "", fmt.Errorf("%s: %w", runtimeEnv, err)
	}
	for _, m := range run {
		if m.kind == nriSetup && !localcluster.ServesNRI(rt) {
			return "", fmt.Errorf("%s %q: mode nri needs a runtime with NRI (%q or %q)", runtimeEnv, env, localcluster.RuntimeContainerd2, localcluster.RuntimeCRIO)
		}
	}
	return rt, nil
}

// runtimePrefix marks the figures of a burst on CRI-O (burst_nri_crio_…);
// those on containerd keep their names.
func runtimePrefix(runtime string) string {
	if runtime == localcluster.RuntimeCRIO {
		return "crio_"
	}
	return ""
}

func containerdMajor(runtime string) int {
	if runtime == localcluster.RuntimeContainerd2 {
		return 2
	}
	return 1
}

// handedOverEnv names a running cluster to take over instead of bringing
// one up (make test hands over its NRI suites' cluster for the smoke): it
// must have one node on the bench's runtime with its own CNI bin folder;
// what earlier users left for tenants is removed, podnet is deployed in
// the mode's way, and the cluster is left running for whoever handed it
// over.
const handedOverEnv = "PODNET_BURST_CLUSTER"

func setUp(t *testing.T, m mode, runtime string) *cluster {
	root := testenv.RepoRoot(t)
	ctx := context.Background()
	// Its own CNI bin folder: Multus goes there, never into the machine's.
	o := localcluster.Options{Name: clusterName(), Nodes: 1, Root: root, Log: testLog{t},
		AttachAtSandboxSetup: m.attach, OwnCNIBinDir: true, Runtime: runtime}
	handedOver := os.Getenv(handedOverEnv)
	if handedOver != "" {
		running, err := localcluster.Load(handedOver, root)
		if err != nil {
			t.Fatalf("%s=%s: %v", handedOverEnv, handedOver, err)
		}
		o.Name, o.NRIDefaultValidator, o.NRITolerateAnnotation = handedOver, running.NRIDefaultValidator, running.NRITolerateAnnotation
	} else if err := localcluster.Down(ctx, o.Name, root); err != nil {
		t.Fatalf("remove an earlier burst cluster: %v", err)
	}
	// Up takes over a healthy running cluster of this shape, else fails
	// naming what differs.
	c, err := localcluster.Up(ctx, o)
	if err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	in := &install.Installer{Root: root, Cluster: c, Log: testLog{t}, DeployEnv: m.deployEnv}
	if handedOver != "" {
		if err := in.RemoveTenants(ctx); err != nil {
			t.Fatal(err)
		}
		if err := in.Deploy(ctx); err != nil {
			t.Fatalf("deploy on cluster %q: %v", c.Name, err)
		}
	} else {
		t.Cleanup(func() {
			if err := c.Down(context.Background()); err != nil {
				t.Errorf("cluster down: %v", err)
			}
		})
		testenv.TearDownBeforeTimeout(t, func() { _ = c.Down(context.Background()) })
		if err := in.All(ctx); err != nil {
			t.Fatalf("install: %v", err)
		}
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, conn, err := cri.Dial("unix://" + c.Nodes[0].CRISocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	cl := &cluster{c: c, in: in, cs: cs, cri: r.Runtime, rt: runtimeapi.NewRuntimeServiceClient(conn)}
	if m.check != nil {
		m.check(t, cl)
	}
	cl.kubectl(t, profile, "apply", "-f", "-")
	cl.kubectl(t, "", "create", "namespace", netNS)
	cl.kubectl(t, "", "label", "namespace", netNS, podnetv1.EnabledLabel+"=true", "tenant=burst")
	cl.kubectl(t, "", "create", "namespace", plainNS)
	cl.setUpMultus(t)
	return cl
}

// testLog sends progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (cl *cluster) kubectl(t *testing.T, stdin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if stdin != "" {
		f, err := os.CreateTemp(t.TempDir(), "manifest-*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(stdin); err != nil {
			t.Fatal(err)
		}
		f.Close()
		args = append(args[:len(args)-1], f.Name())
	}
	if err := cl.in.KubectlRun(ctx, args...); err != nil {
		t.Fatal(err)
	}
}

// run creates a Deployment of n pods of variant v, waits until all are
// Ready, measures, then deletes it and waits until its pods are gone.
func (cl *cluster) run(t *testing.T, v variant, n int) result {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := fmt.Sprintf("burst-%d-%s", n, strings.ReplaceAll(v.name, "_", "-"))
	cl.useMultus(t, v.kind == multusCNI)
	obs := cl.observe(t, ctx, v.namespace, name)
	var prof *profiler
	if cl.pprofPort != "" && v.kind == nriSetup {
		prof = cl.profileAgent(t, ctx)
	}
	res := result{before: cl.agentMetrics(t, ctx), start: time.Now(), deploymentName: name}
	sched, err := sampleSched("/proc", counted)
	if err != nil {
		t.Fatal(err)
	}
	defer sched() // stops the readings if the arm fails
	replicas := n
	if v.pace > 0 {
		replicas = 1
	}
	if _, err := cl.cs.AppsV1().Deployments(v.namespace).Create(ctx, deployment(name, v, replicas), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment %s/%s: %v", v.namespace, name, err)
	}
	for k := 2; k <= n && v.pace > 0; k++ {
		time.Sleep(v.pace)
		patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, k)
		if _, err := cl.cs.AppsV1().Deployments(v.namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("scale deployment %s/%s to %d: %v", v.namespace, name, k, err)
		}
	}
	timeout := 3*time.Minute + time.Duration(n)*3*time.Second
	if err := obs.waitReady(n, timeout); err != nil {
		t.Fatalf("deployment %s/%s: %v", v.namespace, name, err)
	}
	res.pods = obs.timelines()
	res.after = cl.agentMetrics(t, ctx)
	if res.sched, err = sched(); err != nil {
		t.Fatal(err)
	}
	res.sampled = time.Since(res.start)
	if prof != nil {
		res.phases = cl.finish(t, ctx, prof) // after the arm's own counts: it waits for the last profile
	}
	res.withoutNetworks, res.unreported = cl.firstCommands(t, ctx, v.namespace, name)
	cl.remove(t, v.namespace, name)
	return res
}

func deployment(name string, v variant, n int) *appsv1.Deployment {
	labels := map[string]string{appLabel: name}
	annotations := map[string]string{}
	for k, val := range map[string]string{podnetv1.NetworksAnnotation: v.networks, podnetv1.WaitAnnotation: v.wait, podnetv1.MultusNetworksAnnotation: v.multus} {
		if val != "" {
			annotations[k] = val
		}
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "app", Image: "localhost/podnet/busybox:dev", ImagePullPolicy: corev1.PullNever,
				Command: []string{"sh", "-c", firstCommand(v.ifaces)},
			}},
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: v.namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tmpl,
		},
	}
}

// remove deletes the Deployment, waits until none of its pods is left,
// and removes their stopped sandboxes from the runtime, so the next
// Deployment finds the node empty: the kubelet would remove them (and
// their containers' snapshots) at its next garbage collection, up to a
// minute later, in the middle of whichever Deployment then runs.
func (cl *cluster) remove(t *testing.T, namespace, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := cl.cs.AppsV1().Deployments(namespace).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("delete deployment %s/%s: %v", namespace, name, err)
	}
	for {
		pods, err := cl.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + name})
		if err == nil && len(pods.Items) == 0 {
			cl.removeSandboxes(t, ctx, namespace)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pods of deployment %s/%s still there after 5 min", namespace, name)
		case <-time.After(time.Second):
		}
	}
}

// removeSandboxes stops and removes every sandbox of the namespace's
// pods, which no longer exist.
func (cl *cluster) removeSandboxes(t *testing.T, ctx context.Context, namespace string) {
	list, err := cl.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": namespace},
	}})
	if err != nil {
		t.Fatalf("list the sandboxes of namespace %s: %v", namespace, err)
	}
	// The kubelet may remove one first: then it is gone, as wanted. A
	// runtime that was removing it too may say so otherwise than with
	// NotFound (CRI-O: "no such id" from its index, as Unknown), and may
	// then still list the sandbox, its removal cut short: the request is
	// made again (stop and remove are idempotent in CRI) until the
	// sandbox is no longer listed.
	until := func(id string, op func() error) error {
		var err error
		for range 50 {
			if err = op(); err == nil || status.Code(err) == codes.NotFound {
				return nil
			}
			left, lerr := cl.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: id}})
			if lerr == nil && len(left.Items) == 0 {
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		return err
	}
	for _, sb := range list.Items {
		if err := until(sb.Id, func() error {
			_, err := cl.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id})
			return err
		}); err != nil {
			t.Fatalf("stop sandbox %s of namespace %s: %v", sb.Id, namespace, err)
		}
		if err := until(sb.Id, func() error {
			_, err := cl.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id})
			return err
		}); err != nil {
			t.Fatalf("remove sandbox %s of namespace %s: %v", sb.Id, namespace, err)
		}
	}
}

// agentMetrics reads the agent's metrics through the API server's proxy
// to its metrics port.
func (cl *cluster) agentMetrics(t *testing.T, ctx context.Context) string {
	body, err := cl.cs.CoreV1().Pods("podnet-system").ProxyGet("http", cl.agentPod(t, ctx), "9480", "metrics", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("agent metrics: %v", err)
	}
	return string(body)
}

// agentPod is the name of the node's agent pod.
func (cl *cluster) agentPod(t *testing.T, ctx context.Context) string {
	pods, err := cl.cs.CoreV1().Pods("podnet-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=podnet-agent"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("find the agent pod: %v pods, %v", len(pods.Items), err)
	}
	return pods.Items[0].Name
}

// profileSeconds is how long each of the agent's CPU profiles lasts. The
// profiler samples a thread each 10 ms of its own CPU time: what a thread
// ran since its last sample is lost when a profile ends, so short
// profiles of an agent with many lightly loaded threads miss much (in
// runs of the NRI arms beside other work, 1 s profiles held about half
// of the process's CPU time, 5 s ones three quarters to four fifths).
const profileSeconds = 5

// profiler takes the agent's CPU profiles back to back, from profileAgent
// until finish, and adds up each one's CPU time by phase.
type profiler struct {
	stop, done chan struct{}
	err        error
	// phases is what the profiles held (phaseSpan).
	phases phaseSpan
}

// profileAgent reads the agent's metrics and starts profiling it, through
// the API server's proxy to its pprof port.
func (cl *cluster) profileAgent(t *testing.T, ctx context.Context) *profiler {
	pod := cl.agentPod(t, ctx)
	p := &profiler{stop: make(chan struct{}), done: make(chan struct{}),
		phases: phaseSpan{before: cl.agentMetrics(t, ctx), byPhase: map[string]int64{}}}
	go func() {
		defer close(p.done)
		for {
			body, err := cl.cs.CoreV1().Pods("podnet-system").ProxyGet("http", pod, cl.pprofPort, "debug/pprof/profile",
				map[string]string{"seconds": strconv.Itoa(profileSeconds)}).DoRaw(ctx)
			if err == nil {
				err = cpuByPhase(bytes.NewReader(body), p.phases.byPhase)
			}
			if err != nil {
				p.err = fmt.Errorf("agent %s's CPU profile: %w", pod, err)
				return
			}
			select {
			case <-p.stop:
				return
			default:
			}
		}
	}()
	return p
}

// finish waits for the profile under way (at most profileSeconds) and
// reads the agent's metrics again: the span the profiles cover ends up to
// profileSeconds after the arm.
func (cl *cluster) finish(t *testing.T, ctx context.Context, p *profiler) *phaseSpan {
	close(p.stop)
	<-p.done
	if p.err != nil {
		t.Fatal(p.err)
	}
	p.phases.after = cl.agentMetrics(t, ctx)
	return &p.phases
}

// observer records the timelines of one Deployment's pods: from a pod
// watch, and from a 20 ms poll of the node's runtime for the sandboxes.
type observer struct {
	mu   sync.Mutex
	pods map[types.UID]*timeline
}

func (cl *cluster) observe(t *testing.T, ctx context.Context, namespace, name string) *observer {
	o := &observer{pods: map[types.UID]*timeline{}}
	f := informers.NewSharedInformerFactoryWithOptions(cl.cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = appLabel + "=" + name }))
	inf := f.Core().V1().Pods().Informer()
	seen := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			o.sawPod(p, time.Now())
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("pod informer did not sync")
	}
	go o.pollSandboxes(ctx, cl.cri)
	return o
}

func (o *observer) get(uid types.UID) *timeline {
	tl, ok := o.pods[uid]
	if !ok {
		tl = &timeline{}
		o.pods[uid] = tl
	}
	return tl
}

func setOnce(t *time.Time, now time.Time) {
	if t.IsZero() {
		*t = now
	}
}

func (o *observer) sawPod(p *corev1.Pod, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	tl := o.get(p.UID)
	setOnce(&tl.Created, now)
	if p.Spec.NodeName != "" {
		setOnce(&tl.Scheduled, now)
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			tl.Unschedulable = true
		case c.Type == podnetv1.NetworksReadyCondition && c.Status == corev1.ConditionTrue:
			setOnce(&tl.NetworksReady, now)
		case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
			setOnce(&tl.Ready, now)
		}
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.Name == podnetv1.WaitContainerName && s.State.Terminated != nil {
			setOnce(&tl.WaitDone, now)
			tl.WaitMessage = s.State.Terminated.Message
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "app" && s.State.Running != nil {
			setOnce(&tl.AppStarted, now)
		}
	}
}

// pollSandboxes records each sandbox's creation time and when it was
// first listed READY, until ctx ends.
func (o *observer) pollSandboxes(ctx context.Context, rt cri.Runtime) {
	for ctx.Err() == nil {
		list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		now := time.Now()
		if err == nil {
			o.mu.Lock()
			for _, s := range list.Items {
				uid := types.UID(s.Labels[cri.PodUIDLabel])
				tl, ok := o.pods[uid]
				if !ok {
					continue // not this Deployment's, or not seen in the API yet
				}
				setOnce(&tl.SandboxCreated, time.Unix(0, s.CreatedAt))
				if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
					setOnce(&tl.SandboxReady, now)
				}
			}
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReady returns once n pods are Ready, or an error saying how far
// they got.
func (o *observer) waitReady(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		o.mu.Lock()
		ready, unsched := 0, 0
		for _, tl := range o.pods {
			if !tl.Ready.IsZero() {
				ready++
			}
			if tl.Unschedulable {
				unsched++
			}
		}
		o.mu.Unlock()
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d pods Ready after %s (%d refused by the scheduler)", ready, n, timeout, unsched)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (o *observer) timelines() []timeline {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]timeline, 0, len(o.pods))
	for _, tl := range o.pods {
		out = append(out, *tl)
	}
	return out
}

// report prints one N's figures, each line starting with pfx.
func report(pfx string, n int, variants []variant, res map[string]result) {
	for _, v := range variants {
		plain := res[v.baseName()]
		plainAll, _ := allReady(plain.pods, plain.start)
		plainStart := appStarts(plain.pods)
		r := res[v.name]
		all, _ := allReady(r.pods, r.start)
		fmt.Printf("%sall_ready_%s %s s\n", pfx, v.name, secs(all))
		fmt.Printf("%sunschedulable_pods_%s %d pods\n", pfx, v.name, unschedulable(r.pods))
		appStart := appStarts(r.pods)
		for _, q := range quantiles {
			fmt.Printf("%sapp_start_%s_%s %s ms\n", pfx, q.name, v.name, ms(bench.Percentile(appStart, q.q)))
		}
		// From the app's first command: must be 0 in every arm.
		fmt.Printf("%sapps_started_before_interfaces_%s %d pods\n", pfx, v.name, r.withoutNetworks)
		fmt.Printf("%sapps_first_command_unreported_%s %d pods\n", pfx, v.name, r.unreported)
		for _, ph := range phases(v.kind) {
			d := durations(r.pods, ph.From, ph.To)
			if len(d) == 0 {
				continue
			}
			fmt.Printf("%sphase_%s_%s_p50 %s ms\n", pfx, v.name, ph.Name, ms(bench.Percentile(d, 0.5)))
			fmt.Printf("%sphase_%s_%s_p99 %s ms\n", pfx, v.name, ph.Name, ms(bench.Percentile(d, 0.99)))
		}
		reportSched(os.Stdout, pfx, v.name, r.sched)
		reportCPU(os.Stdout, pfx, v.name, n, r.sched)
		if r.sampled > 0 {
			// The node's CPU time over the arm, as a share of its CPUs.
			busy := float64(r.sched.node) / float64(r.sampled) / float64(goruntime.NumCPU())
			fmt.Printf("%snode_busy_%s %.2f ratio\n", pfx, v.name, busy)
		}
		if !v.setAgainst() {
			continue
		}
		fmt.Printf("%sall_ready_ratio_%s_vs_without %.2f x\n", pfx, v.name, float64(all)/float64(plainAll))
		for _, q := range quantiles {
			fmt.Printf("%sapp_start_%s_delay_%s_vs_without %s ms\n", pfx, q.name, v.name, ms(bench.Percentile(appStart, q.q)-bench.Percentile(plainStart, q.q)))
		}
		if m, ok := res[v.vsMultus]; ok {
			mAll, _ := allReady(m.pods, m.start)
			fmt.Printf("%sall_ready_ratio_%s_vs_%s %.2f x\n", pfx, v.name, v.vsMultus, float64(all)/float64(mAll))
		}
		if v.kind == multusCNI || v.control {
			continue // podnet's agent takes no part
		}
		reportAgent(pfx, n, v, r)
	}
}

// reportAgent prints what podnet's agent did for a podnet arm.
func reportAgent(pfx string, n int, v variant, r result) {
	switch v.kind {
	case sandboxSetup:
		reportSetupSteps(pfx, v, r)
	case nriSetup:
		reportNRIHooks(os.Stdout, pfx, v, r)
	default:
		reportWaitUsage(pfx, v, r)
		attach := durations(r.pods, func(p timeline) time.Time { return p.SandboxReady }, func(p timeline) time.Time { return p.NetworksReady })
		fmt.Printf("%ssandbox_to_networks_ready_%s_p50 %s ms\n", pfx, v.name, ms(bench.Percentile(attach, 0.5)))
		fmt.Printf("%ssandbox_to_networks_ready_%s_p99 %s ms\n", pfx, v.name, ms(bench.Percentile(attach, 0.99)))
		if len(attach) > 0 {
			fmt.Printf("%ssandbox_to_networks_ready_%s_max %s ms\n", pfx, v.name, ms(attach[len(attach)-1]))
		}
	}
	reads0, writes0 := bench.Requests(r.before)
	reads, writes := bench.Requests(r.after)
	fmt.Printf("%sagent_api_reads_per_pod_%s %.2f requests\n", pfx, v.name, (reads-reads0)/float64(n))
	fmt.Printf("%sagent_api_writes_per_pod_%s %.2f requests\n", pfx, v.name, (writes-writes0)/float64(n))
	// What the agent itself took of the node's CPUs, which every pod of
	// the burst shares.
	cpu0, err0 := bench.Gauge(r.before, "process_cpu_seconds_total")
	cpu, err := bench.Gauge(r.after, "process_cpu_seconds_total")
	if err := errors.Join(err0, err); err != nil {
		fmt.Printf("burst: %s: the agent's CPU time: %v\n", v.name, err)
	} else {
		fmt.Printf("%sagent_cpu_per_pod_%s %.1f ms\n", pfx, v.name, 1000*(cpu-cpu0)/float64(n))
	}
	reportPhases(os.Stdout, pfx, v.name, "", r)
	// A failed step is retried with the controller's backoff: the
	// usual cause of a pod far behind the others.
	fmt.Printf("%sagent_errors_%s %.0f errors\n", pfx, v.name,
		bench.Sum(r.after, "podnet_agent_errors_total")-bench.Sum(r.before, "podnet_agent_errors_total"))
	const retried = "controller_runtime_reconcile_errors_total"
	fmt.Printf("%sagent_reconcile_errors_%s %.0f errors\n", pfx, v.name,
		bench.Sum(r.after, retried, `controller="podnet-agent"`)-bench.Sum(r.before, retried, `controller="podnet-agent"`))
	// Each reconcile of a pod verifies and judges its approval again.
	const reconciles = "controller_runtime_reconcile_total"
	fmt.Printf("%sagent_reconciles_per_pod_%s %.2f reconciles\n", pfx, v.name,
		(bench.Sum(r.after, reconciles, `controller="podnet-agent"`)-bench.Sum(r.before, reconciles, `controller="podnet-agent"`))/float64(n))
}

// reportSetupSteps prints, for pods attached at sandbox setup, how long
// their sandboxes waited on the agent (from the plugin's request to its
// answer: the networks are in place), step by step, from the agent's
// podnet_agent_sandbox_setup_seconds (estimated within its buckets, as
// histogram_quantile does); and from the sandbox's creation until the
// bench saw networks-ready, which adds containerd's setup before the
// plugin and the agent's status write after.
func reportSetupSteps(pfx string, v variant, r result) {
	reportSteps(os.Stdout, pfx, v, r)
	seen := durations(r.pods, func(p timeline) time.Time { return p.SandboxCreated }, func(p timeline) time.Time { return p.NetworksReady })
	fmt.Printf("%ssandbox_created_to_networks_ready_seen_%s_p50 %s ms\n", pfx, v.name, ms(bench.Percentile(seen, 0.5)))
	fmt.Printf("%ssandbox_created_to_networks_ready_seen_%s_p99 %s ms\n", pfx, v.name, ms(bench.Percentile(seen, 0.99)))
}

// reportWaitUsage prints what the podnet-wait init containers used, from
// their termination messages: the CPU time and peak resident memory of
// the process, and the peak memory of the container's cgroup (which its
// limit applies to), p99 and max over the pods, and how many messages
// did not carry them (0 expected).
func reportWaitUsage(pfx string, v variant, r result) {
	var cpu, rss, peak []float64 // ms, MiB, MiB
	bad := 0
	for _, p := range r.pods {
		u, err := podwait.ParseUsage(p.WaitMessage)
		if err == nil && u.CgroupPeak < 0 {
			err = errors.New("no cgroup-peak")
		}
		if err != nil {
			if bad == 0 {
				fmt.Printf("burst: %s: a wait container's termination message %q: %v\n", v.name, p.WaitMessage, err)
			}
			bad++
			continue
		}
		cpu = append(cpu, float64(u.CPU)/float64(time.Millisecond))
		rss = append(rss, float64(u.MaxRSS)/(1<<20))
		peak = append(peak, float64(u.CgroupPeak)/(1<<20))
	}
	fmt.Printf("%swait_container_usage_missing_%s %d pods\n", pfx, v.name, bad)
	if len(cpu) == 0 {
		return
	}
	for _, f := range []struct {
		name, unit string
		values     []float64
	}{{"cpu", "ms", cpu}, {"max_rss", "MiB", rss}, {"cgroup_peak", "MiB", peak}} {
		fmt.Printf("%swait_container_%s_p99_%s %.2f %s\n", pfx, f.name, v.name, bench.Percentile(f.values, 0.99), f.unit)
		fmt.Printf("%swait_container_%s_max_%s %.2f %s\n", pfx, f.name, v.name, slices.Max(f.values), f.unit)
	}
}
