package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certSpec is one leaf certificate the cluster needs.
type certSpec struct {
	File   string // base name: File.crt and File.key in the pki folder
	CN     string
	Orgs   []string
	DNS    []string
	IPs    []net.IP
	Server bool
	Client bool
}

// planCerts lists every leaf certificate of a cluster: who talks to whom.
func planCerts(l layout) []certSpec {
	specs := []certSpec{
		{
			File: "apiserver", CN: "kube-apiserver", Server: true,
			DNS: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "localhost"},
			IPs: []net.IP{net.IP(l.Nodes[0].IP.AsSlice()), net.IP(l.ServiceIP.AsSlice()), net.IPv4(127, 0, 0, 1)},
		},
		// The API server calls kubelets (exec, logs) as a cluster admin.
		{File: "apiserver-kubelet-client", CN: "kube-apiserver-kubelet-client", Orgs: []string{"system:masters"}, Client: true},
		{File: "admin", CN: "kubernetes-admin", Orgs: []string{"system:masters"}, Client: true},
	}
	for _, n := range l.Nodes {
		// The Node authorizer and NodeRestriction recognise a kubelet by
		// this exact user and group.
		specs = append(specs,
			certSpec{File: n.Dir + "-kubelet-client", CN: "system:node:" + n.Name, Orgs: []string{"system:nodes"}, Client: true},
			certSpec{File: n.Dir + "-kubelet-serving", CN: n.Name, Server: true, DNS: []string{n.Name}, IPs: []net.IP{net.IP(n.IP.AsSlice())}},
		)
	}
	return specs
}

// ensurePKI writes a CA, the leaf certificates and the service account key
// pair into dir. All keys are ECDSA P-256: quick to generate and accepted
// by every component.
func ensurePKI(dir string, l layout) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create pki folder %q: %w", dir, err)
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "podnet-localcluster-" + l.Name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return fmt.Errorf("sign CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("parse CA certificate: %w", err)
	}
	if err := writeKeyPair(dir, "ca", caDER, caKey); err != nil {
		return err
	}
	for _, s := range planCerts(l) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("generate key for %q: %w", s.File, err)
		}
		tmpl := &x509.Certificate{
			SerialNumber:          newSerial(),
			Subject:               pkix.Name{CommonName: s.CN, Organization: s.Orgs},
			DNSNames:              s.DNS,
			IPAddresses:           s.IPs,
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(365 * 24 * time.Hour),
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			BasicConstraintsValid: true,
		}
		if s.Server {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
		if s.Client {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
		if err != nil {
			return fmt.Errorf("sign certificate %q: %w", s.File, err)
		}
		if err := writeKeyPair(dir, s.File, der, key); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return fmt.Errorf("encode service account public key: %w", err)
	}
	return writePEM(filepath.Join(dir, "sa.pub"), "PUBLIC KEY", pub, 0o644)
}

func newSerial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on Linux; a fixed serial would still
		// be a valid (if less unique) certificate.
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

func writeKeyPair(dir, base string, certDER []byte, key crypto.Signer) error {
	if err := writePEM(filepath.Join(dir, base+".crt"), "CERTIFICATE", certDER, 0o644); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, base+".key"), key)
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key %q: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	if err := os.WriteFile(path, data, mode); err != nil {
		return fmt.Errorf("write %q: %w", path, err)
	}
	return nil
}
