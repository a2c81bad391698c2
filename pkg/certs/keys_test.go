package certs

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/approval"
)

// pair writes a fresh key pair into dir under the given base name and
// returns the paths.
func pair(t *testing.T, dir, base string) (priv, pub string) {
	t.Helper()
	priv, pub = filepath.Join(dir, base+".key"), filepath.Join(dir, base+".pub")
	if err := GenerateKeyPair(priv, pub); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGenerateKeyPairFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "keys")
	priv, pub := pair(t, dir, "approval")
	st, err := os.Stat(priv)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode %v, want 0600", st.Mode().Perm())
	}
	block, _ := pem.Decode(read(t, priv))
	if block == nil || block.Type != "PRIVATE KEY" {
		t.Fatalf("private key file is not PEM PRIVATE KEY")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := ParsePublicKeys(read(t, pub))
	if err != nil {
		t.Fatal(err)
	}
	if !k.(ed25519.PrivateKey).Public().(ed25519.PublicKey).Equal(keys[0]) {
		t.Fatal("public key file does not match the private key")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}

func TestSignerAndVerifier(t *testing.T) {
	dir := t.TempDir()
	priv, pub := pair(t, dir, "a")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := s.Sign([]byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify([]byte("payload"), sig); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify([]byte("payloaD"), sig); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("tampered payload: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	priv, pub := pair(t, dir, "a")
	cases := []struct {
		name string
		load func() error
		want string
	}{
		{"missing private key", func() error { _, err := LoadSigner(filepath.Join(dir, "none")); return err }, "none"},
		{"public key as private key", func() error { _, err := LoadSigner(pub); return err }, `no PEM "PRIVATE KEY" block`},
		{"private key as public key", func() error { _, err := LoadVerifier(priv); return err }, `PEM block "PRIVATE KEY" where only "PUBLIC KEY" is allowed`},
		{"garbage", func() error {
			p := filepath.Join(dir, "garbage")
			os.WriteFile(p, []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0o644)
			_, err := LoadVerifier(p)
			return err
		}, "parse PKIX public key"},
	}
	for _, tc := range cases {
		err := tc.load()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestHotReloadInPlace rewrites the key files in place, as an admin or a
// config tool would, and expects the next use to see the new keys at once.
func TestHotReloadInPlace(t *testing.T) {
	dir := t.TempDir()
	priv, pub := pair(t, dir, "live")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.Public()
	for i := 0; i < 5; i++ {
		newPriv, newPub := pair(t, t.TempDir(), "next")
		// Same size, same inode, written within the same clock tick: only
		// the bytes differ.
		if err := os.WriteFile(priv, read(t, newPriv), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pub, read(t, newPub), 0o644); err != nil {
			t.Fatal(err)
		}
		after, err := s.Public()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ParsePublicKeys(read(t, newPub))
		if !after.Equal(want[0]) || after.Equal(before) {
			t.Fatalf("rewrite %d: signer still uses the old key", i)
		}
		sig, _ := s.Sign([]byte("x"))
		if err := v.Verify([]byte("x"), sig); err != nil {
			t.Fatalf("rewrite %d: verifier did not follow: %v", i, err)
		}
		before = after
	}
}

// TestHotReloadSecretVolumeSwap reproduces how the kubelet updates a secret
// volume: the files are symlinks through "..data", which is itself a
// symlink to a timestamped folder; an update writes a new folder and
// renames a new "..data" link over the old one.
func TestHotReloadSecretVolumeSwap(t *testing.T) {
	vol := t.TempDir()
	write := func(version string) (priv, pub []byte) {
		t.Helper()
		p, q := pair(t, filepath.Join(vol, version), "approval")
		tmp := filepath.Join(vol, "..data_tmp")
		if err := os.Symlink(version, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(vol, "..data")); err != nil {
			t.Fatal(err)
		}
		return read(t, p), read(t, q)
	}
	write("..2026_01_01_00_00_00.1")
	for _, name := range []string{"approval.key", "approval.pub"} {
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := LoadSigner(filepath.Join(vol, "approval.key"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(filepath.Join(vol, "approval.pub"))
	if err != nil {
		t.Fatal(err)
	}
	oldSig, _ := s.Sign([]byte("x"))

	_, newPub := write("..2026_01_01_00_00_00.2")
	if err := os.RemoveAll(filepath.Join(vol, "..2026_01_01_00_00_00.1")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Public()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ParsePublicKeys(newPub)
	if !got.Equal(want[0]) {
		t.Fatal("signer did not follow the ..data swap")
	}
	newSig, _ := s.Sign([]byte("x"))
	if err := v.Verify([]byte("x"), newSig); err != nil {
		t.Fatalf("verifier did not follow the ..data swap: %v", err)
	}
	if err := v.Verify([]byte("x"), oldSig); err == nil {
		t.Fatal("verifier still trusts the removed key")
	}
}

// TestBrokenUpdateKeepsLastGoodKey: a half-written or removed file must not
// take signing down; the old key stays in use until a good file appears.
func TestBrokenUpdateKeepsLastGoodKey(t *testing.T) {
	dir := t.TempDir()
	priv, _ := pair(t, dir, "k")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := s.Public()
	if err := os.WriteFile(priv, []byte("-----BEGIN PRIV"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Public(); err != nil || !got.Equal(good) {
		t.Fatalf("after a broken write: key changed or error %v", err)
	}
	if s.Err() == nil || !strings.Contains(s.Err().Error(), priv) {
		t.Fatalf("Err() = %v, want the broken file named", s.Err())
	}
	if err := os.Remove(priv); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sign([]byte("x")); err != nil {
		t.Fatalf("sign with the file gone: %v", err)
	}
	newPriv, newPub := pair(t, t.TempDir(), "n")
	if err := os.WriteFile(priv, read(t, newPriv), 0o600); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Public()
	want, _ := ParsePublicKeys(read(t, newPub))
	if !got.Equal(want[0]) || s.Err() != nil {
		t.Fatalf("good file not picked up after a broken one (err %v)", s.Err())
	}
}

// TestVerifierTrustsEveryKeyInTheFile: rotation without a gap.
func TestVerifierTrustsEveryKeyInTheFile(t *testing.T) {
	dir := t.TempDir()
	oldPriv, oldPub := pair(t, dir, "old")
	newPriv, newPub := pair(t, dir, "new")
	both := filepath.Join(dir, "trusted.pub")
	if err := os.WriteFile(both, append(read(t, oldPub), read(t, newPub)...), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(both)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{oldPriv, newPriv} {
		s, err := LoadSigner(p)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Sign([]byte("x"))
		if err := v.Verify([]byte("x"), sig); err != nil {
			t.Fatalf("key %s not trusted: %v", p, err)
		}
	}
}

// TestHotReloadSameStamp: a rewrite that keeps mtime, size and inode (two
// writes within one tick of the kernel's coarse file clock) is still seen.
func TestHotReloadSameStamp(t *testing.T) {
	dir := t.TempDir()
	priv, _ := pair(t, dir, "k")
	first, err := os.Stat(priv)
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	newPriv, newPub := pair(t, t.TempDir(), "n")
	if err := os.WriteFile(priv, read(t, newPriv), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(priv, first.ModTime(), first.ModTime()); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Stat(priv); !os.SameFile(first, again) || again.Size() != first.Size() || !again.ModTime().Equal(first.ModTime()) {
		t.Fatal("test setup: the rewrite changed the file's identity")
	}
	got, _ := s.Public()
	want, _ := ParsePublicKeys(read(t, newPub))
	if !got.Equal(want[0]) {
		t.Fatal("rewrite with an unchanged stat was not seen")
	}
}

// TestKeyRotationWithFileKeys walks the README's rotation with the
// webhook's file signer and the agent's file verifier, both hot-reloading:
// trust the new public key next to the old, switch the private key, stop
// trusting the old key. Every approval names the key that signed it.
func TestKeyRotationWithFileKeys(t *testing.T) {
	dir := t.TempDir()
	priv, pub := pair(t, dir, "approval")
	s, err := LoadSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}
	a := &v1alpha1.Approval{IssuedAt: metav1.NewTime(time.Now().Truncate(time.Second)), Namespace: "t1", ServiceAccount: "default",
		RequestHash: approval.HashRequest("data"), Profiles: []v1alpha1.ProfileRef{}, Interfaces: []v1alpha1.ApprovedInterface{}}
	sign := func() (string, string, string) {
		t.Helper()
		payload, sig, err := approval.Sign(s, a)
		if err != nil {
			t.Fatal(err)
		}
		key, err := s.Public()
		if err != nil {
			t.Fatal(err)
		}
		return payload, sig, approval.KeyID(key)
	}
	verify := func(payload, sig, wantKey string) {
		t.Helper()
		got, err := approval.Verify(v, payload, sig)
		if err != nil {
			t.Fatal(err)
		}
		if got.KeyID != wantKey {
			t.Fatalf("approval names key %s, want %s", got.KeyID, wantKey)
		}
	}
	oldPayload, oldSig, oldID := sign()
	verify(oldPayload, oldSig, oldID)

	// Step 1: the agents trust both public keys (one file, two blocks).
	newPriv, newPub := pair(t, t.TempDir(), "next")
	if err := os.WriteFile(pub, append(read(t, pub), read(t, newPub)...), 0o644); err != nil {
		t.Fatal(err)
	}
	// Step 2: the webhook signs with the new private key.
	if err := os.WriteFile(priv, read(t, newPriv), 0o600); err != nil {
		t.Fatal(err)
	}
	newPayload, newSig, newID := sign()
	if newID == oldID {
		t.Fatal("the rotated key has the old key's id")
	}
	verify(newPayload, newSig, newID)
	verify(oldPayload, oldSig, oldID)

	// Step 3: once no pod carries an old approval, the old key goes.
	if err := os.WriteFile(pub, read(t, newPub), 0o644); err != nil {
		t.Fatal(err)
	}
	verify(newPayload, newSig, newID)
	if _, err := approval.Verify(v, oldPayload, oldSig); !errors.Is(err, approval.ErrBadSignature) {
		t.Fatalf("approval of the removed key: err %v, want ErrBadSignature", err)
	}
}
