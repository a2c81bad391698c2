package webhook_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
	"podnet.io/podnet/pkg/certs"
	"podnet.io/podnet/test/testenv"
	"podnet.io/podnet/webhook"
)

// harness is a real kube-apiserver with the generated webhook
// configuration (deploy/webhook) installed, pointing at the webhook served
// by a controller-runtime manager in this process, wired exactly as the
// binary wires it.
type harness struct {
	env       *testenv.Env
	mgr       ctrl.Manager
	handler   *webhook.Handler
	verifier  approval.Verifier
	probeURL  string
	metricURL string
}

// startHarness starts the API server and the webhook and waits until the
// webhook is ready.
func startHarness(t testing.TB) *harness {
	t.Helper()
	return startHarnessWith(t, webhook.Options{})
}

// startHarnessWith is startHarness with the options o (its key and wait
// are the harness's own; a nil registerer is the manager's, served on
// metricURL, which only one harness of a test binary may register with).
func startHarnessWith(t testing.TB, o webhook.Options) *harness {
	t.Helper()
	return startHarnessOn(t, testenv.Start(t, webhookEnvOptions(t)), o)
}

// webhookEnvOptions installs the generated webhook configuration, pointing
// at a serving address envtest picks.
func webhookEnvOptions(t testing.TB) testenv.Options {
	return testenv.Options{WebhookInstallOptions: envtest.WebhookInstallOptions{
		Paths: []string{filepath.Join(testenv.RepoRoot(t), "deploy", "webhook")},
	}}
}

// startSharedHarnessWith is startHarnessWith on the test binary's shared
// API server (testenv.SharedWith, whose cleanup deletes every profile and
// claim a test made), its webhook configuration served by this test's
// manager until the test ends. It waits until the server's watch cache
// shows no profile or claim of an earlier test, as the manager's informers
// start from it. A test using it keeps its objects in namespaces of its
// own (testNamespace) and installs nothing cluster-wide.
func startSharedHarnessWith(t *testing.T, o webhook.Options) *harness {
	t.Helper()
	env := testenv.SharedWith(t, webhookEnvOptions(t))
	lists := []client.ObjectList{&v1alpha1.NetworkProfileList{}, &v1alpha1.IPClaimList{}, &v1alpha1.MACClaimList{}}
	testenv.Eventually(t, 30*time.Second, "no profile nor claim of an earlier test in the watch cache", func(ctx context.Context) error {
		for _, l := range lists {
			if err := env.Client.List(ctx, l, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
				return err
			}
			if n := meta.LenList(l); n > 0 {
				return fmt.Errorf("%d of %T", n, l)
			}
		}
		return nil
	})
	return startHarnessOn(t, env, o)
}

var namespaceSeq atomic.Int64

// testNamespace creates a namespace as createNamespace does, named base and
// a number no other test of the binary (nor a rerun under -count) uses, and
// returns its name.
func (h *harness) testNamespace(t testing.TB, base string, labels map[string]string) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", base, namespaceSeq.Add(1))
	h.createNamespace(t, name, labels)
	return name
}

// startHarnessOn starts the webhook as startHarnessWith does, against env.
func startHarnessOn(t testing.TB, env *testenv.Env, o webhook.Options) *harness {
	t.Helper()
	wio := env.Env.WebhookInstallOptions

	keys := t.TempDir()
	priv, pub := filepath.Join(keys, "approval.key"), filepath.Join(keys, "approval.pub")
	if err := certs.GenerateKeyPair(priv, pub); err != nil {
		t.Fatal(err)
	}
	verifier, err := certs.LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}

	probe, metricsAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  webhook.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probe,
		WebhookServer: crwebhook.NewServer(crwebhook.Options{
			Host: wio.LocalServingHost, Port: wio.LocalServingPort, CertDir: wio.LocalServingCertDir,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	o.Key = webhook.NewSigningKey(func() (approval.Signer, error) { return certs.LoadSigner(priv) })
	o.Wait = webhook.WaitOptions{Image: webhook.DefaultWaitImage, Timeout: webhook.DefaultWaitTimeout}
	if o.Registerer == nil {
		o.Registerer = metrics.Registry
	}
	if o.Claims == nil {
		o.Claims = mgr.GetAPIReader()
	}
	h, err := webhook.Register(mgr, o)
	if err != nil {
		t.Fatal(err)
	}
	testenv.RunManager(t, context.Background(), mgr)
	hs := &harness{env: env, mgr: mgr, handler: h, verifier: verifier,
		probeURL: "http://" + probe, metricURL: "http://" + metricsAddr + "/metrics"}
	testenv.Eventually(t, 60*time.Second, "webhook ready", func(ctx context.Context) error {
		_, err := hs.get(ctx, hs.probeURL+"/readyz")
		return err
	})
	return hs
}

// get fetches a URL and fails on any status but 200.
func (h *harness) get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// createNamespace creates a namespace with a default service account (no
// service account controller runs here) and returns its name.
func (h *harness) createNamespace(t testing.TB, name string, labels map[string]string) {
	t.Helper()
	ctx := context.Background()
	if err := h.env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "default"}}
	if err := h.env.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create service account in %s: %v", name, err)
	}
}

// createProfile creates a profile and waits until the webhook's cache has
// it, so that the next admission sees it.
func (h *harness) createProfile(t testing.TB, p *v1alpha1.NetworkProfile) {
	t.Helper()
	if err := h.env.Client.Create(context.Background(), p); err != nil {
		t.Fatalf("create profile %s: %v", p.Name, err)
	}
	h.waitCached(t, p)
}

// waitCached waits until the webhook's cache holds obj at its current
// resource version.
func (h *harness) waitCached(t testing.TB, obj client.Object) {
	t.Helper()
	want := obj.GetResourceVersion()
	testenv.Eventually(t, 30*time.Second, "cache has "+obj.GetName(), func(ctx context.Context) error {
		got := obj.DeepCopyObject().(client.Object)
		if err := h.mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			return err
		}
		if got.GetResourceVersion() != want {
			return fmt.Errorf("cache at %s, want %s", got.GetResourceVersion(), want)
		}
		return nil
	})
}

// agentClient is a client that the API server sees as the agent's service
// account (v1alpha1.AgentUser), bound to cluster-admin: only who it is
// matters to the webhook, and this API server runs without podnet's RBAC.
func (h *harness) agentClient(t testing.TB) client.Client {
	t.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "test-podnet-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: v1alpha1.SystemNamespace, Name: "podnet-agent"}},
	}
	if err := h.env.Client.Create(context.Background(), binding); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + v1alpha1.SystemNamespace, "system:authenticated"}
	// The API server's authorizer sees a new binding through its own
	// cache, moments later on a busy machine: wait until it allows.
	testenv.Eventually(t, 30*time.Second, "the agent's binding in force", func(ctx context.Context) error {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: v1alpha1.AgentUser, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "patch", Resource: "pods"},
		}}
		if err := h.env.Client.Create(ctx, review); err != nil {
			return err
		}
		if !review.Status.Allowed {
			return fmt.Errorf("%s may not patch pods yet", v1alpha1.AgentUser)
		}
		return nil
	})
	cfg := rest.CopyConfig(h.env.Config)
	cfg.QPS, cfg.Burst = 100000, 100000
	cfg.Impersonate = rest.ImpersonationConfig{UserName: v1alpha1.AgentUser, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: h.env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pod is a minimal pod; without a scheduler or kubelet it is only stored.
func pod(namespace, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "localhost/podnet/busybox:dev", Command: []string{"sleep", "3600"}}},
		},
	}
}

// kubeconfig writes a kubeconfig for a cluster admin of the env.
func (h *harness) kubeconfig(t testing.TB) string {
	return h.env.AdminKubeconfig(t, "tenant-admin")
}
