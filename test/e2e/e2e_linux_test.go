package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/install"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/testenv"
)

const tenantNS = "tenant-a"

// clusterName is "e2e" unless PODNET_E2E_CLUSTER names another, so that two
// checkouts can each run the suite on a cluster of their own at once.
// nodeRuntime is the nodes' container runtime: PODNET_E2E_RUNTIME
// (localcluster.RuntimeContainerd for Debian's containerd 1.6), by
// default containerd 2, the runtime users have. installWithHelm
// (PODNET_E2E_INSTALL=helm) has the suites that install podnet as make
// deploy does with no variable of its own (or only the DRA plugin's)
// install it with the Helm chart and the cluster's values file instead,
// as a user would on a make demo cluster.
var (
	clusterName     = envOr("PODNET_E2E_CLUSTER", "e2e")
	nodeRuntime     = envOr("PODNET_E2E_RUNTIME", localcluster.RuntimeContainerd2)
	installWithHelm = os.Getenv("PODNET_E2E_INSTALL") == "helm"
	node1           = clusterName + "-n1"
	node2           = clusterName + "-n2"
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// suite is the state the subtests share: one cluster for all of them.
type suite struct {
	in      *install.Installer
	cluster *localcluster.Cluster
	client  client.Client
}

// TestRootE2E brings up the cluster once and runs every scenario against
// it, in order: later steps build on the tenant's Deployment.
func TestRootE2E(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the e2e suite runs a local cluster (network namespaces, kubelet): run it as root")
	}
	s := setUp(t)
	t.Run("AdminProfileAndNamespace", s.testAdmin)
	t.Run("DefaultHoldIsTheWaitContainerWithoutNRIEnforced", s.testDefaultHold)
	t.Run("DRANetworkAllocatedByScheduler", s.testDRA)
	t.Run("DRABridgeAndMacvlanFromClaimTemplates", s.testDRABridgeAndMacvlan)
	t.Run("DRAClaimAttacks", s.testDRAAttacks)
	t.Run("TenantPodsReadyWithInterfaces", s.testTenantPods)
	t.Run("GuaranteedPodWithWaitImage", s.testGuaranteedPodWithWaitImage)
	t.Run("PingIPv4AndIPv6", s.testPing)
	t.Run("DenialInReplicaSetEvent", s.testDenial)
	t.Run("RuntimeAttachDetach", s.testAttachDetach)
	t.Run("CrossNodeBridgeIsNodeLocal", s.testCrossNode)
	t.Run("ScaleToZeroLeavesNothing", s.testScaleToZero)
	t.Run("ControllerFreesClaimsAndWritesStatus", s.testController)
	t.Run("KubectlPodnetExplainsStuckPods", s.testKubectlPodnet)
	t.Run("MultusPodMigrated", s.testMultusPod)
	t.Run("DefaultRouteWhereAllowed", s.testDefaultRoute)
	t.Run("NetworksSpanNodes", s.testSpan)
	t.Run("PlacementByNodeCapability", s.testPlacement)
	t.Run("AddressCheckOnTheWire", s.testAddressCheck)
	t.Run("InterfaceSettingsWithinBounds", s.testSettings)
	t.Run("SLAACFromARouterOutsidePodnet", s.testSLAAC)
	t.Run("HostDeviceTakenWholeAndGivenBack", s.testHostDevice)
	t.Run("HostDeviceAllocatedThroughDRA", s.testHostDeviceDRA)
	t.Run("PolicyOnSecondaryNetworks", s.testPolicy)
	t.Run("Attacks", s.testAttacks)
	// Last: it scales the webhook to zero.
	t.Run("WebhookDown", s.testWebhookDown)
}

func setUp(t *testing.T) *suite {
	return setUpWith(t, localcluster.Options{Name: clusterName, Nodes: 2}, withDRA)
}

// withDRA deploys the agents serving the DRA kubelet plugin to their
// node's kubelet (hack/deploy.sh NODE_KUBELET_DIR).
func withDRA(in *install.Installer) {
	in.DeployEnv = append(in.DeployEnv, "NODE_KUBELET_DIR="+localcluster.NodeKubeletDir)
}

// setUpWith brings up the cluster o names (fresh) and installs podnet.
func setUpWith(t *testing.T, o localcluster.Options, tweaks ...func(*install.Installer)) *suite {
	return setUpAt(t, o, alone, tweaks...)
}

// setUpAt installs podnet on the fixture o names, taken at place p of its
// chain of suites, as make deploy does with tweaks applied.
func setUpAt(t *testing.T, o localcluster.Options, p place, tweaks ...func(*install.Installer)) *suite {
	in := &install.Installer{}
	for _, f := range tweaks {
		f(in)
	}
	return fixtureFor(t, o, p).deployed(t, in.DeployEnv...)
}

// startCluster brings up the cluster o names (fresh), to be brought down
// when the test ends, and returns its installer.
func startCluster(t *testing.T, o localcluster.Options) *install.Installer {
	f := fixtureFor(t, o, alone)
	return &install.Installer{Root: testenv.RepoRoot(t), Cluster: f.cluster, Log: testLog{t}}
}

// upCluster brings up the cluster o names, fresh: a cluster kept by an
// earlier run (PODNET_E2E_KEEP) or left by a killed one holds that run's
// objects.
func upCluster(t *testing.T, root string, o localcluster.Options) *localcluster.Cluster {
	ctx := context.Background()
	if err := localcluster.Down(ctx, o.Name, root); err != nil {
		t.Fatalf("remove an earlier e2e cluster: %v", err)
	}
	o.Root, o.Log = root, testLog{t}
	c, err := localcluster.Up(ctx, o)
	if err != nil {
		t.Fatalf("cluster up: %v", err)
	}
	return c
}

// newSuite connects to the cluster of in.
func newSuite(t *testing.T, in *install.Installer) *suite {
	return &suite{in: in, cluster: in.Cluster, client: newClient(t, in.Cluster)}
}

// newClient is a client of the cluster that knows podnet's types.
func newClient(t *testing.T, c *localcluster.Cluster) client.Client {
	cfg, err := c.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := podnetv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// testLog sends progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// kubectl runs kubectl with stdin and fails the test on error.
func (s *suite) kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := s.kubectlErr(stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// kubectlErr runs kubectl and returns stdout, or an error carrying stderr.
func (s *suite) kubectlErr(stdin string, args ...string) (string, error) {
	cmd := exec.Command(s.in.Kubectl(), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+s.cluster.Kubeconfig)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func (s *suite) apply(t *testing.T, manifest string) {
	t.Helper()
	s.kubectl(t, manifest, "apply", "-f", "-")
}

// eventually polls check until it passes or timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func(ctx context.Context) error) {
	t.Helper()
	testenv.Eventually(t, timeout, what, check)
}

const profile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata:
  name: e2e
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  maxInterfaces: 2
  networks:
  - name: data
    bridge: {name: pnbr-e2e}
    mtu: {default: 1500, max: 9000}
    allowRawSockets: true   # the pods ping with busybox, which needs NET_RAW
    ipam:
      pools: ["192.168.50.0/24", "fd00:50::/64"]
  - name: extra
    bridge: {name: pnbr-e2x}
    allowRawSockets: true   # RuntimeAttachDetach adds it to pods that kept NET_RAW for data
    ipam:
      pools: ["192.168.51.0/24"]
`

func (s *suite) testAdmin(t *testing.T) {
	s.apply(t, profile)
	s.kubectl(t, "", "create", "namespace", tenantNS)
	s.kubectl(t, "", "label", "namespace", tenantNS, podnetv1.EnabledLabel+"=true", "tenant=a")
	// Tenants see what they may ask for through the aggregated view role.
	s.kubectl(t, "", "create", "serviceaccount", "viewer", "-n", tenantNS)
	s.kubectl(t, "", "create", "rolebinding", "viewer", "-n", tenantNS, "--clusterrole=view", "--serviceaccount="+tenantNS+":viewer")
	out := s.kubectl(t, "", "auth", "can-i", "list", "networkprofiles.podnet.io", "--as=system:serviceaccount:"+tenantNS+":viewer")
	if strings.TrimSpace(out) != "yes" {
		t.Fatalf("a tenant with the view role cannot list NetworkProfiles: %q", out)
	}
	if out, err := s.kubectlErr("", "auth", "can-i", "create", "networkprofiles.podnet.io", "--as=system:serviceaccount:"+tenantNS+":viewer"); err == nil || strings.TrimSpace(out) != "no" {
		t.Fatalf("a tenant with the view role may create NetworkProfiles: %q %v", out, err)
	}
	// Holders of the built-in view role get the same rules by aggregation.
	view := s.kubectl(t, "", "get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}")
	if !strings.Contains(view, "networkprofiles") {
		t.Fatalf("the view ClusterRole does not aggregate networkprofiles: %s", view)
	}
}

// deployment is a tenant Deployment pinned to a node, asking for networks.
func deployment(name, node, networks string, replicas int) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[1]s, namespace: %[5]s}
spec:
  replicas: %[4]d
  selector: {matchLabels: {app: %[1]s}}
  template:
    metadata:
      labels: {app: %[1]s}
      annotations: {%[6]s: %[3]q}
    spec:
      nodeSelector: {kubernetes.io/hostname: %[2]s}
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: localhost/podnet/busybox:dev
        imagePullPolicy: Never
        command: ["sleep", "86400"]
`, name, node, networks, replicas, tenantNS, podnetv1.NetworksAnnotation)
}

// netStatus is one entry of the network-status annotation.
type netStatus struct {
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
}

func (s *suite) pods(ctx context.Context, app string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := s.client.List(ctx, &list, client.InNamespace(tenantNS), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live, nil
}

func statusOf(p corev1.Pod) ([]netStatus, error) {
	raw, ok := p.Annotations[podnetv1.NetworkStatusAnnotation]
	if !ok {
		return nil, fmt.Errorf("pod %s/%s has no %s", p.Namespace, p.Name, podnetv1.NetworkStatusAnnotation)
	}
	var st []netStatus
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return nil, fmt.Errorf("pod %s/%s: decode %q: %w", p.Namespace, p.Name, raw, err)
	}
	return st, nil
}

func ipsOf(st []netStatus, iface string) []string {
	for _, s := range st {
		if s.Interface == iface {
			return s.IPs
		}
	}
	return nil
}

func ready(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodsWith waits until app has n Ready pods whose status lists every
// interface in ifaces with at least one address, and returns them.
func (s *suite) waitPodsWith(t *testing.T, app string, n int, ifaces ...string) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	eventually(t, 3*time.Minute, fmt.Sprintf("%d Ready %s pods with %v", n, app, ifaces), func(ctx context.Context) error {
		var err error
		got, err = s.podsWith(ctx, app, n, ifaces...)
		return err
	})
	return got
}

// podsWith returns app's pods if there are n, each Ready with at least one
// address on every interface in ifaces, and an error saying what is
// missing otherwise.
func (s *suite) podsWith(ctx context.Context, app string, n int, ifaces ...string) ([]corev1.Pod, error) {
	pods, err := s.pods(ctx, app)
	if err != nil {
		return nil, err
	}
	if len(pods) != n {
		return nil, fmt.Errorf("%d pods", len(pods))
	}
	for _, p := range pods {
		if !ready(p) {
			return nil, fmt.Errorf("pod %s not Ready", p.Name)
		}
		st, err := statusOf(p)
		if err != nil {
			return nil, err
		}
		for _, i := range ifaces {
			if len(ipsOf(st, i)) == 0 {
				return nil, fmt.Errorf("pod %s: no addresses on %s in %v", p.Name, i, st)
			}
		}
	}
	return pods, nil
}

func (s *suite) exec(pod string, args ...string) (string, error) {
	return s.kubectlErr("", append([]string{"-n", tenantNS, "exec", pod, "-c", "app", "--"}, args...)...)
}

func (s *suite) testTenantPods(t *testing.T) {
	s.apply(t, deployment("web", node1, "data", 2))
	pods := s.waitPodsWith(t, "web", 2, "net1")
	for _, p := range pods {
		out, err := s.exec(p.Name, "ip", "addr", "show", "net1")
		if err != nil {
			t.Fatal(err)
		}
		st, _ := statusOf(p)
		for _, ip := range ipsOf(st, "net1") {
			if !strings.Contains(out, ip+"/64") && !strings.Contains(out, ip+"/24") {
				t.Errorf("pod %s: net1 lacks %s:\n%s", p.Name, ip, out)
			}
		}
	}
}

func (s *suite) testPing(t *testing.T) {
	pods := s.waitPodsWith(t, "web", 2, "net1")
	st, err := statusOf(pods[1])
	if err != nil {
		t.Fatal(err)
	}
	var v4, v6 int
	for _, ip := range ipsOf(st, "net1") {
		if strings.Contains(ip, ":") {
			v6++
		} else {
			v4++
		}
		if out, err := s.exec(pods[0].Name, "ping", "-c", "2", "-W", "3", ip); err != nil {
			t.Errorf("ping %s from %s to %s over net1: %v\n%s", ip, pods[0].Name, pods[1].Name, err, out)
		}
	}
	if v4 != 1 || v6 != 1 {
		t.Fatalf("want one IPv4 and one IPv6 address on net1, have %v", ipsOf(st, "net1"))
	}
}

func (s *suite) testDenial(t *testing.T) {
	// Three interfaces where the profile allows two.
	s.apply(t, deployment("greedy", node1, "data, data@net2, extra@net3", 1))
	eventually(t, 2*time.Minute, "FailedCreate event naming the limit", func(ctx context.Context) error {
		var events corev1.EventList
		if err := s.client.List(ctx, &events, client.InNamespace(tenantNS)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "ReplicaSet" && strings.HasPrefix(e.InvolvedObject.Name, "greedy-") && e.Reason == "FailedCreate" {
				// The denial names the limit and the profile, and says what
				// the namespace may ask for instead.
				if strings.Contains(e.Message, "maxInterfaces 2") && strings.Contains(e.Message, `profile "e2e"`) && strings.Contains(e.Message, "may use") {
					t.Logf("denial: %s", e.Message)
					return nil
				}
				return fmt.Errorf("FailedCreate without the limit: %s", e.Message)
			}
		}
		return fmt.Errorf("no FailedCreate event for greedy yet")
	})
	if pods, err := s.pods(context.Background(), "greedy"); err != nil || len(pods) != 0 {
		t.Fatalf("denied Deployment has pods: %d (%v)", len(pods), err)
	}
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "greedy")
}

func (s *suite) testAttachDetach(t *testing.T) {
	pods := s.waitPodsWith(t, "web", 2, "net1")
	pod := pods[0].Name
	s.kubectl(t, "", "-n", tenantNS, "annotate", "pod", pod, "--overwrite", podnetv1.NetworksAnnotation+"=data, extra@net2")
	s.waitIface(t, pod, "net2", true)
	if out, err := s.exec(pod, "ip", "addr", "show", "net2"); err != nil || !strings.Contains(out, "192.168.51.") {
		t.Fatalf("net2 not attached with an address from extra's pool: %v\n%s", err, out)
	}
	s.kubectl(t, "", "-n", tenantNS, "annotate", "pod", pod, "--overwrite", podnetv1.NetworksAnnotation+"=data")
	s.waitIface(t, pod, "net2", false)
	if out, err := s.exec(pod, "ip", "link", "show", "net2"); err == nil {
		t.Fatalf("net2 still in the pod after detach:\n%s", out)
	}
	if out, err := s.exec(pod, "ip", "link", "show", "net1"); err != nil {
		t.Fatalf("net1 gone after detaching net2: %v\n%s", err, out)
	}
}

// waitIface waits until the pod's network-status lists iface (or not).
func (s *suite) waitIface(t *testing.T, pod, iface string, present bool) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%s on pod %s present=%v", iface, pod, present), func(ctx context.Context) error {
		var p corev1.Pod
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: pod}, &p); err != nil {
			return err
		}
		st, err := statusOf(p)
		if err != nil {
			return err
		}
		if (len(ipsOf(st, iface)) > 0) != present {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
}

// testCrossNode: a bridge network is a bridge on each node, with no link
// between nodes (the README says so); cluster-wide IPAM still keeps the
// addresses apart.
func (s *suite) testCrossNode(t *testing.T) {
	s.apply(t, deployment("far", node2, "data", 1))
	far := s.waitPodsWith(t, "far", 1, "net1")[0]
	webs := s.waitPodsWith(t, "web", 2, "net1")
	near := webs[0]
	farSt, _ := statusOf(far)
	nearSt, _ := statusOf(near)
	farIP := ipsOf(farSt, "net1")[0]
	for _, ip := range ipsOf(nearSt, "net1") {
		if ip == farIP {
			t.Fatalf("pods on two nodes share address %s", ip)
		}
	}
	// The same command must work to a pod on the same node, so that the
	// failure below can only mean "no reply", not a broken exec or ping.
	neighbourSt, _ := statusOf(webs[1])
	if out, err := s.exec(near.Name, "ping", "-c", "1", "-W", "2", ipsOf(neighbourSt, "net1")[0]); err != nil {
		t.Fatalf("ping to a pod on the same node failed: %v\n%s", err, out)
	}
	out, err := s.exec(near.Name, "ping", "-c", "1", "-W", "2", farIP)
	if err == nil {
		t.Fatalf("bridge network spans nodes although it is documented node-local:\n%s", out)
	}
	if !strings.Contains(out, " 0 packets received") {
		t.Fatalf("ping across nodes failed without reporting a lost packet: %v\n%s", err, out)
	}
	s.kubectl(t, "", "-n", tenantNS, "delete", "deployment", "far")
}

// hostLinks lists the links podnet created (marked with its ifalias) in a
// node's network namespace. Reading only.
func hostLinks(t *testing.T, netns string) []string {
	t.Helper()
	out, err := exec.Command("ip", "-n", filepath.Base(netns), "-o", "-d", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("list links in %s: %v\n%s", netns, err, out)
	}
	var links []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, " alias "+dataplane.HostLinkAlias) {
			f := strings.Fields(line)
			if len(f) > 1 {
				links = append(links, strings.TrimSuffix(f[1], ":"))
			}
		}
	}
	return links
}

func (s *suite) testScaleToZero(t *testing.T) {
	s.waitPodsWith(t, "web", 2, "net1")
	if l := hostLinks(t, s.cluster.Nodes[0].NetNS); len(l) == 0 {
		t.Fatalf("no podnet links on %s while pods run: the check below would prove nothing", s.cluster.Nodes[0].Name)
	}
	var claims podnetv1.IPClaimList
	if err := s.client.List(context.Background(), &claims); err != nil || len(claims.Items) == 0 {
		t.Fatalf("no IPClaims while pods run (%v): the check below would prove nothing", err)
	}
	s.kubectl(t, "", "-n", tenantNS, "scale", "deployment", "web", "--replicas=0")
	eventually(t, 2*time.Minute, "no pods, host links or IPClaims left", func(ctx context.Context) error {
		pods, err := s.pods(ctx, "web")
		if err != nil || len(pods) > 0 {
			return fmt.Errorf("%d pods (%v)", len(pods), err)
		}
		for _, n := range s.cluster.Nodes {
			if l := hostLinks(t, n.NetNS); len(l) > 0 {
				return fmt.Errorf("host links left on %s: %v", n.Name, l)
			}
		}
		var claims podnetv1.IPClaimList
		if err := s.client.List(ctx, &claims); err != nil {
			return err
		}
		if len(claims.Items) > 0 {
			return fmt.Errorf("%d IPClaims left", len(claims.Items))
		}
		return nil
	})
}

func bareOrAskingPod(name, ns string, ask bool) string {
	ann := ""
	if ask {
		ann = fmt.Sprintf("\n  annotations: {%s: data}", podnetv1.NetworksAnnotation)
	}
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s%s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: ["sleep", "86400"]
`, name, ns, ann)
}

func (s *suite) testWebhookDown(t *testing.T) {
	s.kubectl(t, "", "-n", "podnet-system", "scale", "deployment", "podnet-webhook", "--replicas=0")
	t.Cleanup(func() {
		s.kubectl(t, "", "-n", "podnet-system", "scale", "deployment", "podnet-webhook", "--replicas=2")
		s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "deployment/podnet-webhook", "--timeout=120s")
	})
	eventually(t, time.Minute, "webhook endpoints gone", func(ctx context.Context) error {
		var pods corev1.PodList
		if err := s.client.List(ctx, &pods, client.InNamespace("podnet-system"), client.MatchingLabels{"app.kubernetes.io/name": "podnet-webhook"}); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d webhook pods", len(pods.Items))
		}
		return nil
	})
	// A pod that asks for nothing is created: matchConditions keep it away
	// from the unreachable webhook.
	s.apply(t, bareOrAskingPod("plain", tenantNS, false))
	// A pod that asks is refused, with the reason.
	_, err := s.kubectlErr(bareOrAskingPod("asking", tenantNS, true), "apply", "-f", "-")
	if err == nil {
		t.Fatal("a pod asking for networks was admitted while the webhook is down")
	}
	if !strings.Contains(err.Error(), "podnet") || !strings.Contains(err.Error(), "webhook") {
		t.Fatalf("refusal does not name the webhook: %v", err)
	}
	t.Logf("refusal: %v", err)
	// kube-system never goes through the webhook, even when a pod there
	// carries a podnet annotation.
	s.apply(t, bareOrAskingPod("podnet-e2e-probe", "kube-system", true))
	s.kubectl(t, "", "-n", "kube-system", "delete", "pod", "podnet-e2e-probe", "--wait=false")
	s.kubectl(t, "", "-n", tenantNS, "delete", "pod", "plain", "--wait=false")
}

// testController: podnet-controller runs two replicas, one of them holding
// the Lease; it has written the status of every profile (Ready, the
// observed generation and pool usage), and it deletes the claim of a pod
// that does not exist.
func (s *suite) testController(t *testing.T) {
	ctx := context.Background()
	var dep appsv1.Deployment
	if err := s.client.Get(ctx, client.ObjectKey{Namespace: "podnet-system", Name: "podnet-controller"}, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Status.ReadyReplicas != 2 {
		t.Fatalf("podnet-controller has %d ready replicas, want 2", dep.Status.ReadyReplicas)
	}
	eventually(t, time.Minute, "a podnet-controller replica holds the Lease", func(ctx context.Context) error {
		var lease coordinationv1.Lease
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: "podnet-system", Name: "podnet-controller"}, &lease); err != nil {
			return err
		}
		if lease.Spec.HolderIdentity == nil || !strings.HasPrefix(*lease.Spec.HolderIdentity, "podnet-controller-") {
			return fmt.Errorf("lease holder %v", lease.Spec.HolderIdentity)
		}
		return nil
	})
	eventually(t, time.Minute, "every profile has its status", func(ctx context.Context) error {
		var profiles podnetv1.NetworkProfileList
		if err := s.client.List(ctx, &profiles); err != nil {
			return err
		}
		if len(profiles.Items) == 0 {
			return errors.New("no profiles")
		}
		for _, p := range profiles.Items {
			st := p.Status
			ready := meta.FindStatusCondition(st.Conditions, "Ready")
			if st.ObservedGeneration != p.Generation || ready == nil || ready.Status != metav1.ConditionTrue {
				return fmt.Errorf("profile %s: generation %d, status %+v", p.Name, p.Generation, st)
			}
			pools := 0
			for _, n := range p.Spec.Networks {
				if n.IPAM != nil {
					pools += len(n.IPAM.Pools)
				}
			}
			if pools > 0 && st.LeastAvailable == nil {
				return fmt.Errorf("profile %s has %d pools and no usage in its status %+v", p.Name, pools, st)
			}
		}
		return nil
	})
	// One pod holding addresses, so that the figures checked are not all
	// 0 (the suites before may have left none).
	holder := attackPod("usage-holder", tenantNS, nil)
	if err := s.client.Create(ctx, holder); err != nil {
		t.Fatal(err)
	}
	s.waitNet1(t, tenantNS, holder.Name, true, 2*time.Minute)
	eventually(t, time.Minute, "every profile's usage is the count of its claims", func(ctx context.Context) error {
		return s.usageMatchesClaims(ctx)
	})
	if err := s.client.Delete(ctx, holder); err != nil {
		t.Error(err)
	}
	ghost := &podnetv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-ghost.10-254-254-254",
			Labels: map[string]string{podnetv1.NodeLabel: s.cluster.Nodes[0].Name, podnetv1.NetworkLabel: "e2e-ghost", podnetv1.PodUIDLabel: "no-such-pod"}},
		Spec: podnetv1.IPClaimSpec{Network: "e2e-ghost", Address: "10.254.254.254", Interface: "net1",
			Pod: podnetv1.PodReference{Namespace: tenantNS, Name: "no-such-pod", UID: "no-such-pod"}},
	}
	if err := s.client.Create(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the claim of a pod that does not exist is deleted", func(ctx context.Context) error {
		err := s.client.Get(ctx, client.ObjectKeyFromObject(ghost), &podnetv1.IPClaim{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err=%v)", err)
	})
}

// usageMatchesClaims checks every pool's addresses in use in every
// profile's status against the IPClaims holding addresses of the pool in
// the network's address space, and that some pool has any: the figure, not
// only its presence.
func (s *suite) usageMatchesClaims(ctx context.Context) error {
	var profiles podnetv1.NetworkProfileList
	var claims podnetv1.IPClaimList
	if err := s.client.List(ctx, &profiles); err != nil {
		return err
	}
	if err := s.client.List(ctx, &claims); err != nil {
		return err
	}
	total := int64(0)
	for _, p := range profiles.Items {
		for _, n := range p.Spec.Networks {
			if n.IPAM == nil {
				continue
			}
			space := policy.NetworkSpace(&n)
			for _, pool := range n.IPAM.Pools {
				prefix, err := netip.ParsePrefix(pool)
				if err != nil {
					continue
				}
				want := int64(0)
				for _, c := range claims.Items {
					a, err := netip.ParseAddr(c.Spec.Address)
					if err == nil && prefix.Masked().Contains(a) && policy.ClaimInSpace(c.Spec.Network, c.Spec.AddressSpace, n.Name, space) {
						want++
					}
				}
				got := int64(-1)
				for _, u := range p.Status.Networks {
					for _, pu := range u.Pools {
						if u.Name == n.Name && pu.Pool == pool {
							got = pu.InUse
						}
					}
				}
				if got != want {
					return fmt.Errorf("profile %s network %s pool %s: status says %d in use, the claims %d", p.Name, n.Name, pool, got, want)
				}
				total += want
			}
		}
	}
	if total == 0 {
		return errors.New("no pool of any profile has an address in use: nothing was checked")
	}
	return nil
}
