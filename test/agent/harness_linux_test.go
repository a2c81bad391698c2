package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/pkg/cri"
	"podnet.io/podnet/pkg/dataplane"
	"podnet.io/podnet/pkg/nldump"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/testenv"
)

// world is everything one test uses: API server, containerd, the node's
// throwaway netns, the signing key and the agent binary. The API server
// and the agent binary are the test binary's (testenv.Shared, binary),
// so what a test makes there is its own by name: its node (the agent's
// --node-name, on which its pods are) and its namespaces (uniqueName).
type world struct {
	t          *testing.T
	id         string
	node       string
	env        *testenv.Env
	cri        *critest.CRI
	hostNS     string // path of the node's throwaway netns
	signer     approval.Signer
	publicKey  string
	bin        string
	kubeconfig string
	dir        string
}

func randomHex(t testing.TB, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newWorld is a world on the test binary's shared containerd 1.6
// (critest.SharedWith), which every test leaves without sandboxes.
func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldOn(t, func(root string) *critest.CRI { return critest.SharedWith(t, root, critest.Options{}) })
}

// newWorldWith is newWorld with a containerd of its own started with o,
// for a test that needs options of its own or stops the runtime.
func newWorldWith(t *testing.T, o critest.Options) *world {
	t.Helper()
	return newWorldOn(t, func(root string) *critest.CRI { return critest.StartWith(t, root, o) })
}

// newWorldOn is a world whose containerd is runtime's.
func newWorldOn(t *testing.T, runtime func(root string) *critest.CRI) *world {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the agent integration tests start containerd and use network namespaces: run them as root")
	}
	w := &world{t: t, id: randomHex(t, 4), dir: t.TempDir()}
	w.node = "pntest-node-" + w.id
	w.env = testenv.Shared(t)
	w.cri = runtime(w.env.Root)

	// The node's throwaway netns is named after it.
	name := w.node
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	w.hostNS = "/var/run/netns/" + name

	priv := filepath.Join(w.dir, "approval.key")
	w.publicKey = filepath.Join(w.dir, "approval.pub")
	if err := certs.GenerateKeyPair(priv, w.publicKey); err != nil {
		t.Fatal(err)
	}
	s, err := certs.LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	w.signer = s

	w.bin = binary(t, image.AgentCommand)
	w.kubeconfig = w.agentKubeconfig()
	if err := w.env.Client.Create(context.Background(), testProfile()); err != nil {
		t.Fatal(err)
	}
	return w
}

// agentKubeconfig makes a user bound to exactly the generated agent
// ClusterRole, so the test fails when the RBAC markers miss a verb. The
// role and its binding are the API server's, shared by the tests: each
// test puts them in place as the file says (an earlier test may have
// made them).
func (w *world) agentKubeconfig() string {
	t := w.t
	ctx := context.Background()
	data, err := os.ReadFile(filepath.Join(w.env.Root, "deploy", "rbac", "agent", "role.yaml"))
	if err != nil {
		t.Fatalf("generated agent role: %v (run `make manifests`)", err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	want := role.DeepCopy()
	if _, err := controllerutil.CreateOrUpdate(ctx, w.env.Client, &role, func() error {
		role.Rules, role.AggregationRule = want.Rules, want.AggregationRule
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const user = "system:serviceaccount:podnet-system:podnet-agent"
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "podnet-agent"}}
	if _, err := controllerutil.CreateOrUpdate(ctx, w.env.Client, binding, func() error {
		binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}
		binding.Subjects = []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	u, err := w.env.Env.AddUser(envtest.User{Name: user}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(w.dir, "agent.kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// agentProc is a running podnet-agent.
type agentProc struct {
	*testenv.Process
	log     *bytes.Buffer
	metrics string
}

// startAgent runs the agent binary, with extra flags after the test's
// defaults; it is stopped by PID when the test ends unless the test killed
// it first.
func (w *world) startAgent(extra ...string) *agentProc {
	w.t.Helper()
	return w.startAgentEnv(nil, extra...)
}

// startAgentEnv is startAgent with environ added to the test's environment
// (a later value of a variable wins).
func (w *world) startAgentEnv(environ []string, extra ...string) *agentProc {
	t := w.t
	t.Helper()
	metrics := testenv.FreeAddr(t)
	a := &agentProc{log: &bytes.Buffer{}, metrics: metrics}
	cmd := exec.Command(w.bin,
		"--kubeconfig", w.kubeconfig,
		"--node-name", w.node,
		"--cri-endpoint", "unix://"+w.cri.Socket,
		"--public-key", w.publicKey,
		"--host-netns", w.hostNS,
		"--resync", "2s",
		"--metrics-bind-address", metrics,
		"--health-probe-bind-address", "0",
	)
	cmd.Args = append(cmd.Args, extra...)
	if environ != nil {
		cmd.Env = append(os.Environ(), environ...)
	}
	cmd.Stdout, cmd.Stderr = a.log, a.log
	a.Process = testenv.StartProcess(t, cmd, 20*time.Second, func() {
		t.Logf("podnet-agent (pid %d) log tail:\n%s", cmd.Process.Pid, testenv.Tail(a.log.String(), 6000))
	})
	return a
}

// uniqueName is base made the test's own: the tests share the API server,
// which deletes no namespace (no namespace controller runs).
func (w *world) uniqueName(base string) string {
	return base + "-" + w.id
}

// ensureNamespace creates an opted-in namespace of the test (uniqueName)
// and its default service account, and returns its name.
func (w *world) ensureNamespace(base string) string {
	ctx := context.Background()
	name := w.uniqueName(base)
	if err := w.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.EnabledLabel: "true"}}}); err != nil {
		w.t.Fatal(err)
	}
	if err := w.env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: v1alpha1.DefaultServiceAccount}}); err != nil {
		w.t.Fatal(err)
	}
	return name
}

// sign plays the webhook: the approval of request for a pod of namespace;
// uid binds it to an existing pod, as the webhook does on UPDATE.
func (w *world) sign(namespace, request string, uid types.UID, ifcs ...v1alpha1.ApprovedInterface) (payload, sig string) {
	a := &v1alpha1.Approval{
		PodUID: string(uid),
		// Issued now: the pod is created right after, as through the webhook.
		IssuedAt:       metav1.NewTime(time.Now().Truncate(time.Second)),
		Namespace:      namespace,
		ServiceAccount: v1alpha1.DefaultServiceAccount,
		RequestHash:    approval.HashRequest(request),
		Profiles:       []v1alpha1.ProfileRef{{Name: "test", Generation: 1}},
		Interfaces:     ifcs,
	}
	payload, sig, err := approval.Sign(w.signer, a)
	if err != nil {
		w.t.Fatal(err)
	}
	return payload, sig
}

// requestOf is the Multus-style request naming the interfaces' networks.
func requestOf(ifcs []v1alpha1.ApprovedInterface) string {
	var parts []string
	for _, i := range ifcs {
		parts = append(parts, i.Network+"@"+i.Interface)
	}
	return strings.Join(parts, ", ")
}

// approvedFor are the annotations of an existing pod whose request
// changes to ifcs, approved for its UID as the webhook approves an UPDATE.
func (w *world) approvedFor(pod *corev1.Pod, ifcs ...v1alpha1.ApprovedInterface) map[string]string {
	req := requestOf(ifcs)
	payload, sig := w.sign(pod.Namespace, req, pod.UID, ifcs...)
	return map[string]string{
		v1alpha1.NetworksAnnotation:          req,
		v1alpha1.ApprovedAnnotation:          payload,
		v1alpha1.ApprovedSignatureAnnotation: sig,
	}
}

// testProfile grants the networks of the approvals these tests sign
// (profile "test") to every opted-in namespace: the agent re-checks that
// the grant stands before it attaches.
func testProfile() *v1alpha1.NetworkProfile {
	bridge := func(name, br string, pools ...string) v1alpha1.Network {
		return v1alpha1.Network{Name: name, Bridge: &v1alpha1.BridgeNetwork{Name: br}, IPAM: &v1alpha1.IPAM{Pools: pools, AllowStatic: true}}
	}
	// data lets the tests choose its MTU and route (the agent narrows what
	// the profile no longer allows).
	data := bridge("data", "pnbr-data", "192.168.100.0/24")
	data.IPAM.Gateways = []string{"192.168.100.1"}
	data.MTU = &v1alpha1.MTURange{Max: new(int32(9000))}
	data.Routes = &v1alpha1.RoutePolicy{Allowed: []string{"10.50.0.0/16"}}
	return &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "test"},
		Spec: v1alpha1.NetworkProfileSpec{Networks: []v1alpha1.Network{
			data,
			bridge("storage", "pnbr-stor", "192.168.200.0/24"),
			bridge("extra", "pnbr-extra", "fd00:300::/64"),
			// Larger pools on the same bridges for the benches' hundreds of pods.
			bridge("benchdata", "pnbr-data", "10.100.0.0/16"),
			bridge("benchstore", "pnbr-stor", "10.200.0.0/16"),
		}},
	}
}

// approvedAnnotations are the three podnet annotations of a pod asking for
// ifcs, approved.
func (w *world) approvedAnnotations(namespace string, ifcs ...v1alpha1.ApprovedInterface) map[string]string {
	req := requestOf(ifcs)
	payload, sig := w.sign(namespace, req, "", ifcs...)
	return map[string]string{
		v1alpha1.NetworksAnnotation:          req,
		v1alpha1.ApprovedAnnotation:          payload,
		v1alpha1.ApprovedSignatureAnnotation: sig,
	}
}

// createPod creates a pod bound to the node (there is no scheduler) with
// the readiness gate the webhook would add.
func (w *world) createPod(namespace, name string, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{}
	if err := w.tryCreatePod(namespace, name, annotations, p); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// tryCreatePod is createPod for goroutines other than the test's: it
// returns the error instead of failing the test.
func (w *world) tryCreatePod(namespace, name string, annotations map[string]string, p *corev1.Pod) error {
	*p = corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeName:                     w.node,
			AutomountServiceAccountToken: new(bool),
			Containers:                   []corev1.Container{{Name: "app", Image: image.BusyboxImage, SecurityContext: dropsNetRaw()}},
			ReadinessGates:               []corev1.PodReadinessGate{{ConditionType: v1alpha1.NetworksReadyCondition}},
		},
	}
	return w.env.Client.Create(context.Background(), p)
}

// dropsNetRaw is the security context the webhook gives a container of a
// pod whose networks do not allow raw sockets; the agent refuses pods
// whose containers keep NET_RAW.
func dropsNetRaw() *corev1.SecurityContext {
	return &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"NET_RAW"}}}
}

// runSandbox plays the kubelet: a sandbox labelled with the pod's UID.
func (w *world) runSandbox(p *corev1.Pod) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := w.cri.RunSandbox(ctx, p.Namespace, p.Name, string(p.UID))
	if err != nil {
		w.t.Fatal(err)
	}
	return id
}

func (w *world) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	var p corev1.Pod
	err := w.env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &p)
	return &p, err
}

// waitCondition waits for the pod's networks-ready condition to have the
// status and reason, and returns the pod.
func (w *world) waitCondition(namespace, name string, status corev1.ConditionStatus, reason string, timeout time.Duration) *corev1.Pod {
	w.t.Helper()
	var pod *corev1.Pod
	testenv.Eventually(w.t, timeout, fmt.Sprintf("pod %s/%s condition %s=%s (%s)", namespace, name, v1alpha1.NetworksReadyCondition, status, reason), func(ctx context.Context) error {
		p, err := w.getPod(ctx, namespace, name)
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1alpha1.NetworksReadyCondition {
				if c.Status == status && c.Reason == reason {
					pod = p
					return nil
				}
				return fmt.Errorf("condition is %s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("no condition yet")
	})
	return pod
}

// sandboxNetNS is the netns path containerd made for the pod.
func (w *world) sandboxNetNS(p *corev1.Pod) string {
	w.t.Helper()
	sb, err := cri.Resolver{Runtime: w.cri.Runtime}.Sandbox(context.Background(), string(p.UID))
	if err != nil {
		w.t.Fatal(err)
	}
	return sb.NetNS
}

// handleAt opens a netlink handle in the namespace at path.
func handleAt(t *testing.T, path string) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromPath(path)
	if err != nil {
		t.Fatalf("open netns %q: %v", path, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in %q: %v", path, err)
	}
	t.Cleanup(h.Close)
	return h
}

// podLinks are the pod's links other than lo and eth0, by name.
func podLinks(t *testing.T, h *netlink.Handle) map[string]netlink.Link {
	t.Helper()
	links, err := nldump.Links(h)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]netlink.Link{}
	for _, l := range links {
		if n := l.Attrs().Name; n != "lo" && n != "eth0" {
			out[n] = l
		}
	}
	return out
}

// globalAddrs are a link's addresses without IPv6 link-local ones.
func globalAddrs(t *testing.T, h *netlink.Handle, l netlink.Link) []string {
	t.Helper()
	addrs, err := nldump.Addrs(h, l, netlink.FAMILY_ALL)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range addrs {
		if !a.IP.IsLinkLocalUnicast() {
			out = append(out, a.IPNet.String())
		}
	}
	return out
}

// nodeLinksOf lists the node links podnet marked for the pod UID.
func nodeLinksOf(t *testing.T, h *netlink.Handle, uid types.UID) []string {
	t.Helper()
	links, err := nldump.Links(h)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Alias, dataplane.HostLinkAlias+":"+string(uid)+":") {
			out = append(out, l.Attrs().Name)
		}
	}
	return out
}

// claimsOf lists the pod's IPClaims as "network/interface=address".
func (w *world) claimsOf(ctx context.Context, uid types.UID) ([]string, error) {
	var list v1alpha1.IPClaimList
	if err := w.env.Client.List(ctx, &list, client.MatchingLabels{v1alpha1.PodUIDLabel: string(uid)}); err != nil {
		return nil, err
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, c.Spec.Network+"/"+c.Spec.Interface+"="+c.Spec.Address)
	}
	return out, nil
}
