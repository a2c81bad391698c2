package approval

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

const request = "data, uplink@net2"

// issued is the issue time of sample(); pod() is created one second later.
var issued = metav1.NewTime(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))

func sample() *v1alpha1.Approval {
	return &v1alpha1.Approval{
		IssuedAt:       issued,
		Namespace:      "t1",
		ServiceAccount: "cnf",
		RequestHash:    HashRequest(request),
		Profiles:       []v1alpha1.ProfileRef{{Name: "telco-data", Generation: 3}},
		PrimaryMTU:     8900,
		Interfaces: []v1alpha1.ApprovedInterface{{
			Interface: "net1", Network: "data", Profile: "telco-data", Kind: v1alpha1.KindBridge,
			Bridge: "pnbr-data", VLAN: 120, MTU: 9000, MAC: "02:00:00:00:00:07",
			IPAM:   &v1alpha1.ApprovedIPAM{Pools: []string{"192.168.100.0/24"}, Gateways: []string{"192.168.100.1"}, Static: []string{"192.168.100.7/24"}},
			Routes: []v1alpha1.ApprovedRoute{{Dst: "10.50.0.0/16", Gateway: "192.168.100.1"}},
		}, {
			Interface: "net2", Network: "uplink", Profile: "telco-data", Kind: v1alpha1.KindMacvlan, Master: "eth1", Mode: "bridge",
		}},
	}
}

func keys(t *testing.T) (Ed25519Signer, Ed25519Verifier) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Ed25519Signer{Key: priv}, Ed25519Verifier{Keys: []ed25519.PublicKey{pub}}
}

func pod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "p", UID: "uid-1", Annotations: annotations,
			CreationTimestamp: metav1.NewTime(issued.Add(time.Second))},
		Spec: corev1.PodSpec{ServiceAccountName: "cnf"},
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	s, v := keys(t)
	payload, sig, err := Sign(s, sample())
	if err != nil {
		t.Fatal(err)
	}
	again, sig2, err := Sign(s, sample())
	if err != nil {
		t.Fatal(err)
	}
	if payload != again || sig != sig2 {
		t.Fatal("signing the same approval twice gave different annotations")
	}
	got, err := Verify(v, payload, sig)
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	want.KeyID = KeyID(v.Keys[0])
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip changed the approval:\n%+v\n%+v", got, want)
	}
	p := pod(map[string]string{
		v1alpha1.NetworksAnnotation:          request,
		v1alpha1.ApprovedAnnotation:          payload,
		v1alpha1.ApprovedSignatureAnnotation: sig,
	})
	if _, err := VerifyPod(v, p); err != nil {
		t.Fatalf("VerifyPod: %v", err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	s, v := keys(t)
	payload, sig, err := Sign(s, sample())
	if err != nil {
		t.Fatal(err)
	}
	// Every single-bit change of every payload byte is refused.
	for i := 0; i < len(payload); i++ {
		for bit := 0; bit < 8; bit++ {
			b := []byte(payload)
			b[i] ^= 1 << bit
			if _, err := Verify(v, string(b), sig); err == nil {
				t.Fatalf("payload with byte %d bit %d flipped verified", i, bit)
			}
		}
	}
	raw, _ := base64.StdEncoding.DecodeString(sig)
	for i := range raw {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		if _, err := Verify(v, payload, base64.StdEncoding.EncodeToString(b)); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("signature with byte %d changed: err %v, want ErrBadSignature", i, err)
		}
	}
	if _, err := Verify(v, payload+" ", sig); err == nil {
		t.Fatal("payload with a trailing space verified")
	}
	if _, err := Verify(v, payload, sig[:len(sig)-4]); err == nil {
		t.Fatal("truncated signature verified")
	}
	if _, err := Verify(v, payload, "not base64!"); err == nil || !strings.Contains(err.Error(), "not base64") {
		t.Fatalf("bad base64: %v", err)
	}
}

func TestVerifyRefusesWrongKey(t *testing.T) {
	s, _ := keys(t)
	_, other := keys(t)
	payload, sig, err := Sign(s, sample())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(other, payload, sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("verified with another key: %v", err)
	}
}

func TestDecodeIsStrict(t *testing.T) {
	// Even correctly signed, a payload that is not Encode's own output is
	// refused: one approval has exactly one byte form.
	s, v := keys(t)
	canonical, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"unknown field":   strings.Replace(string(canonical), `"namespace"`, `"extra":1,"namespace"`, 1),
		"whitespace":      strings.Replace(string(canonical), `"namespace":`, `"namespace": `, 1),
		"field order":     strings.Replace(string(canonical), `"namespace":"t1","serviceAccount":"cnf"`, `"serviceAccount":"cnf","namespace":"t1"`, 1),
		"trailing object": string(canonical) + "{}",
		"not json":        "approved",
	}
	for name, payload := range cases {
		if payload == string(canonical) {
			t.Fatalf("%s: case did not change the payload", name)
		}
		sig := ed25519.Sign(s.Key, []byte(payload))
		if _, err := Verify(v, payload, base64.StdEncoding.EncodeToString(sig)); err == nil {
			t.Errorf("%s: accepted %s", name, payload)
		}
	}
	if _, err := Decode(canonical); err != nil {
		t.Fatalf("canonical payload refused: %v", err)
	}
	if _, err := Encode(nil); err == nil {
		t.Fatal("nil approval encoded")
	}
}

func TestCheckBinding(t *testing.T) {
	a := sample()
	tests := []struct {
		name    string
		mutate  func(p *corev1.Pod)
		wantErr string
	}{
		{name: "bound", mutate: func(*corev1.Pod) {}},
		{name: "other namespace", mutate: func(p *corev1.Pod) { p.Namespace = "t2" }, wantErr: `issued for namespace "t1"`},
		{name: "other service account", mutate: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "web" }, wantErr: `issued for service account "cnf", the pod runs as "web"`},
		{name: "empty service account is default", mutate: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "" }, wantErr: `the pod runs as "default"`},
		{name: "edited request", mutate: func(p *corev1.Pod) { p.Annotations[v1alpha1.NetworksAnnotation] = request + ", l2" }, wantErr: "answers another podnet.io/networks request"},
		{name: "request removed", mutate: func(p *corev1.Pod) { delete(p.Annotations, v1alpha1.NetworksAnnotation) }, wantErr: "answers another"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(map[string]string{v1alpha1.NetworksAnnotation: request})
			tc.mutate(p)
			wantBindingErr(t, CheckBinding(a, p), tc.wantErr)
		})
	}
}

func TestVerifyPod(t *testing.T) {
	s, v := keys(t)
	payload, sig, err := Sign(s, sample())
	if err != nil {
		t.Fatal(err)
	}
	if a, err := VerifyPod(v, pod(map[string]string{v1alpha1.NetworksAnnotation: request})); a != nil || err != nil {
		t.Fatalf("pod without approval: %v, %v", a, err)
	}
	if _, err := VerifyPod(v, pod(map[string]string{v1alpha1.ApprovedAnnotation: payload})); err == nil {
		t.Fatal("approval without signature accepted")
	}
	// A valid approval copied to a pod of another service account.
	p := pod(map[string]string{v1alpha1.NetworksAnnotation: request, v1alpha1.ApprovedAnnotation: payload, v1alpha1.ApprovedSignatureAnnotation: sig})
	p.Spec.ServiceAccountName = "default"
	if _, err := VerifyPod(v, p); err == nil || !strings.Contains(err.Error(), "service account") {
		t.Fatalf("copied approval: %v", err)
	}
}

// wantBindingErr checks a CheckBinding result: nil when want is empty,
// else an error naming the pod (p) and containing want.
func wantBindingErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "/p") {
		t.Fatalf("err %v, want one naming the pod and %q", err, want)
	}
}
