package install

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"podnet.io/podnet/test/testenv"
)

// TestCertManagerIssuesServingCertificate runs the cert-manager binary that
// hack/cert-manager builds, as two processes against a real kube-apiserver,
// applies deploy/podnet/certificates.yaml unchanged and checks the result
// as the API server would use it: the webhook configuration's injected
// caBundle verifies the issued serving certificate for the Service's DNS
// name.
func TestCertManagerIssuesServingCertificate(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	root := env.Root
	build := exec.CommandContext(ctx, filepath.Join(root, "hack", "cert-manager", "build.sh"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("hack/cert-manager/build.sh: %v\n%s", err, out)
	}
	crds, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "_output", "cert-manager", "crds")}, ErrorIfPathMissing: true,
	})
	if err != nil || len(crds) == 0 {
		t.Fatalf("install cert-manager CRDs: %d, %v", len(crds), err)
	}
	kubeconfig := env.AdminKubeconfig(t, "cert-manager")
	for _, cmd := range []string{"controller", "cainjector"} {
		startCertManager(t, root, kubeconfig, cmd)
	}

	kubectl := func(args ...string) {
		t.Helper()
		c := exec.Command(filepath.Join(root, "_output", "k8s", "bin", "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	kubectl("create", "namespace", "podnet-system")
	kubectl("apply", "-f", filepath.Join(root, "deploy", "podnet", "certificates.yaml"))
	hook := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "cm-test",
			Annotations: map[string]string{"cert-manager.io/inject-ca-from": "podnet-system/podnet-webhook"},
		},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "cm-test.podnet.io",
			ClientConfig:            admissionv1.WebhookClientConfig{Service: &admissionv1.ServiceReference{Namespace: "podnet-system", Name: "podnet-webhook"}},
			SideEffects:             ptr.To(admissionv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			// Matches nothing: the configuration is only a target for the injector.
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"never": "set"}},
		}},
	}
	if err := env.Client.Create(ctx, hook); err != nil {
		t.Fatal(err)
	}

	var serving corev1.Secret
	testenv.Eventually(t, 3*time.Minute, "serving certificate issued", func(ctx context.Context) error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: "podnet-system", Name: "podnet-webhook-serving"}, &serving)
	})
	var caBundle []byte
	testenv.Eventually(t, 2*time.Minute, "caBundle injected", func(ctx context.Context) error {
		var got admissionv1.MutatingWebhookConfiguration
		if err := env.Client.Get(ctx, client.ObjectKey{Name: hook.Name}, &got); err != nil {
			return err
		}
		if caBundle = got.Webhooks[0].ClientConfig.CABundle; len(caBundle) == 0 {
			return fmt.Errorf("caBundle empty")
		}
		return nil
	})

	leaf := parseCert(t, serving.Data["tls.crt"])
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caBundle) {
		t.Fatalf("caBundle holds no certificate:\n%s", caBundle)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "podnet-webhook.podnet-system.svc"}); err != nil {
		t.Fatalf("serving certificate does not verify against the injected CA: %v", err)
	}
	ca := parseCert(t, caBundle)
	if !ca.IsCA || ca.Subject.CommonName != "podnet-webhook-ca" {
		t.Fatalf("injected CA is %q (isCA %v), want the podnet-webhook-ca CA", ca.Subject.CommonName, ca.IsCA)
	}
	if leaf.Issuer.CommonName != "podnet-webhook-ca" {
		t.Fatalf("serving certificate issued by %q, want podnet-webhook-ca", leaf.Issuer.CommonName)
	}
}

func parseCert(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("no PEM block in %q", data)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startCertManager runs one cert-manager command and stops it by PID when
// the test ends, showing its log if the test failed.
func startCertManager(t *testing.T, root, kubeconfig, command string) {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), command+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "_output", "cert-manager", "bin", "cert-manager"), command,
		"--kubeconfig="+kubeconfig, "--healthz-addr=")
	if command == "controller" {
		cmd.Args = append(cmd.Args, "--min-backoff=2s", "--max-backoff=10s")
	}
	cmd.Stdout, cmd.Stderr = log, log
	t.Cleanup(func() { log.Close() })
	testenv.StartProcess(t, cmd, 10*time.Second, func() {
		out, _ := os.ReadFile(log.Name())
		if len(out) > 6000 {
			out = out[len(out)-6000:]
		}
		t.Logf("cert-manager %s log (tail):\n%s", command, out)
	})
}
