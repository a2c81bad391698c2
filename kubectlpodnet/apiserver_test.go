package kubectlpodnet_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/kubectlpodnet"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/pkg/ipam"
	"podnet.io/podnet/pkg/policy"
	"podnet.io/podnet/test/testenv"
	"podnet.io/podnet/webhook"
)

// pluginEnv is a real kube-apiserver with podnet's CRDs and its webhook
// configuration, answered by the webhook wired as the binary wires it.
type pluginEnv struct {
	env        *testenv.Env
	kubeconfig string
}

func startPluginEnv(t *testing.T) *pluginEnv {
	t.Helper()
	env := testenv.Start(t, testenv.Options{WebhookInstallOptions: envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(t), "deploy", "webhook")},
	}})
	wio := env.Env.WebhookInstallOptions
	dir := t.TempDir()
	priv := filepath.Join(dir, "approval.key")
	if err := certs.GenerateKeyPair(priv, filepath.Join(dir, "approval.pub")); err != nil {
		t.Fatal(err)
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme, Cache: webhook.CacheOptions(),
		Metrics:       metricsserver.Options{BindAddress: "0"},
		WebhookServer: crwebhook.NewServer(crwebhook.Options{Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webhook.Register(mgr, webhook.Options{
		Key:        webhook.NewSigningKey(func() (approval.Signer, error) { return certs.LoadSigner(priv) }),
		Wait:       webhook.WaitOptions{Image: webhook.DefaultWaitImage, Timeout: webhook.DefaultWaitTimeout},
		Registerer: metrics.Registry,
	}); err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(t, context.Background(), mgr)
	return &pluginEnv{env: env, kubeconfig: env.AdminKubeconfig(t, "plugin-admin")}
}

// run runs `kubectl podnet args…` in-process, as the binary does.
func (p *pluginEnv) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := kubectlpodnet.Main(context.Background(), append([]string{"--kubeconfig", p.kubeconfig}, args...), &out, &errOut)
	t.Logf("kubectl podnet %s (exit %d)\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return out.String(), errOut.String(), code
}

func (p *pluginEnv) create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := p.env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

// dataProfile offers "data" (a /29: 6 addresses) and "wide" to namespaces
// labelled tenant=telco.
func dataProfile() *v1alpha1.NetworkProfile {
	return &v1alpha1.NetworkProfile{
		ObjectMeta: metav1.ObjectMeta{Name: "telco"},
		Spec: v1alpha1.NetworkProfileSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "telco"}},
			MaxInterfaces:     2,
			Networks: []v1alpha1.Network{
				{Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"},
					MTU:  &v1alpha1.MTURange{Default: ptr.To[int32](1500), Max: ptr.To[int32](9000)},
					IPAM: &v1alpha1.IPAM{Pools: []string{"192.168.7.0/29"}}},
				{Name: "wide", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-wide"},
					IPAM: &v1alpha1.IPAM{Pools: []string{"10.9.0.0/16"}}},
			},
		},
	}
}

func ipClaim(network, addr string) *v1alpha1.IPClaim {
	a := netip.MustParseAddr(addr)
	return &v1alpha1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{Name: ipam.ClaimName(network+".bridge", a), Labels: map[string]string{v1alpha1.NetworkLabel: network}},
		Spec: v1alpha1.IPClaimSpec{Network: network, Address: addr, Interface: "net1",
			Pod: v1alpha1.PodReference{Namespace: "t1", Name: "p-" + strings.ReplaceAll(addr, ".", "-"), UID: "u-" + addr}},
	}
}

// TestPluginAgainstAPIServer runs networks, pools, can-i and explain
// against a real kube-apiserver whose pod admission goes through podnet's
// webhook.
func TestPluginAgainstAPIServer(t *testing.T) {
	p := startPluginEnv(t)
	p.create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t1", Labels: map[string]string{v1alpha1.EnabledLabel: "true", "tenant": "telco"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "t2", Labels: map[string]string{"tenant": "telco"}}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "default"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "t2", Name: "default"}},
		dataProfile(),
		ipClaim("data", "192.168.7.1"), ipClaim("data", "192.168.7.2"), ipClaim("data", "192.168.7.3"),
		ipClaim("wide", "10.9.3.4"), ipClaim("data", "10.9.0.1"), // a "data" address outside its pool counts nowhere
	)
	t.Run("networks", func(t *testing.T) { testNetworks(t, p) })
	t.Run("pools", func(t *testing.T) { testPools(t, p) })
	t.Run("can-i", func(t *testing.T) { testCanI(t, p) })
	t.Run("explain", func(t *testing.T) { testExplainUnscheduled(t, p) })
}

func testNetworks(t *testing.T, p *pluginEnv) {
	out, errOut, code := p.run(t, "networks", "-n", "t1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NETWORK") ||
		!strings.Contains(lines[1], "data") || !strings.Contains(lines[1], "telco (max 2 interfaces)") ||
		!strings.Contains(lines[1], "bridge pnbr-data, mtu 576-9000 (default 1500), ips from 192.168.7.0/29 (no static)") ||
		!strings.HasPrefix(lines[2], "wide") {
		t.Fatalf("networks table:\n%s", out)
	}
	out, errOut, code = p.run(t, "networks", "-n", "t2", "-o", "json")
	var offers policy.Offers
	if err := json.Unmarshal([]byte(out), &offers); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s%s", code, err, out, errOut)
	}
	if offers.Enabled || len(offers.Networks) != 0 || !strings.Contains(offers.Summary, "not opted in") {
		t.Fatalf("t2 offers %+v", offers)
	}
	if _, errOut, code := p.run(t, "networks", "-n", "t1", "-o", "wide"); code != 1 || !strings.Contains(errOut, `--output "wide"`) {
		t.Fatalf("-o wide: exit %d, %s", code, errOut)
	}
}

func testPools(t *testing.T, p *pluginEnv) {
	out, errOut, code := p.run(t, "pools")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// Both pools are shared (the profile selects by a tenant label), so
	// each has the default quota: half its usable addresses, at most 4096.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 ||
		strings.Join(strings.Fields(lines[1]), " ") != "telco data 192.168.7.0/29 6 3 3 50.0% t1 3/3" ||
		strings.Join(strings.Fields(lines[2]), " ") != "telco wide 10.9.0.0/16 65534 1 65533 <0.1% t1 1/4096" {
		t.Fatalf("pools table (fullest first):\n%s", out)
	}
	out, _, code = p.run(t, "pools", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "inUse: 3") {
		t.Fatalf("pools -o yaml: exit %d\n%s", code, out)
	}
}

func testCanI(t *testing.T, p *pluginEnv) {
	// The tenant may create pods in t1 and nothing else: can-i runs as it.
	p.create(t,
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "pods"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "alice"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pods"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}},
	)
	var r kubectlpodnet.CanIResult
	testenv.Eventually(t, 30*time.Second, "can-i allowed once the webhook's cache has the profile", func(context.Context) error {
		out, errOut, code := p.run(t, "can-i", "-n", "t1", "--as", "alice", "-o", "json", "data@net1, wide")
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
			return fmt.Errorf("exit %d, %v: %s%s", code, err, out, errOut)
		}
		return nil
	})
	if !r.Allowed || len(r.Interfaces) != 2 || r.Interfaces[0].Interface != "net1" || r.Interfaces[0].Bridge != "pnbr-data" || r.Interfaces[1].Network != "wide" {
		t.Fatalf("can-i allowed: %+v", r)
	}
	out, _, code := p.run(t, "can-i", "-n", "t1", "--as", "alice", "data@net1, wide")
	if code != 0 || !strings.HasPrefix(out, "yes\nINTERFACE") || !strings.Contains(out, "net2") {
		t.Fatalf("can-i allowed, as text: exit %d\n%s", code, out)
	}
	out, _, code = p.run(t, "can-i", "-n", "t1", "--as", "alice", "data, wide, data@net9")
	if code != 1 || !strings.HasPrefix(out, "no\n") || !strings.Contains(out, "above maxInterfaces 2") || !strings.Contains(out, `namespace "t1" may use: data`) {
		t.Fatalf("can-i over the limit: exit %d\n%s", code, out)
	}
	out, _, code = p.run(t, "can-i", "-n", "t2", "data")
	if code != 1 || !strings.Contains(out, `namespace "t2" is not opted in`) {
		t.Fatalf("can-i in a namespace not opted in: exit %d\n%s", code, out)
	}
	if _, errOut, code := p.run(t, "can-i", "-n", "t1", "--as", "bob", "data"); code != 2 || !strings.Contains(errOut, "forbidden") {
		t.Fatalf("can-i without RBAC: exit %d, %s", code, errOut)
	}
	pods := &corev1.PodList{}
	if err := p.env.Client.List(context.Background(), pods); err != nil || len(pods.Items) != 0 {
		t.Fatalf("can-i created pods: %v %d", err, len(pods.Items))
	}
}

func testExplainUnscheduled(t *testing.T, p *pluginEnv) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "waiting", Annotations: map[string]string{v1alpha1.NetworksAnnotation: "data"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	p.create(t, pod)
	out, errOut, code := p.run(t, "explain", "-n", "t1", "waiting")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Requested:  data", "profiles telco (generation 1)", "net1", "bridge pnbr-data", "Reason:     the pod is not scheduled"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	if _, errOut, code := p.run(t, "explain", "-n", "t1", "nosuchpod"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("explain of a missing pod: exit %d, %s", code, errOut)
	}
}
