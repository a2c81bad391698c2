package certs

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBrokenTrustedKeysFileIsReported: a rotated public-key file that does
// not parse keeps the last good keys it still lists, drops at once a key
// it no longer lists, and says so (Check, LoadErrors) until a good file is
// back; a good file that drops a key drops it at once too.
func TestBrokenTrustedKeysFileIsReported(t *testing.T) {
	dir := t.TempDir()
	oldPriv, oldPub := pair(t, dir, "old")
	newPriv, newPub := pair(t, dir, "new")
	path := filepath.Join(dir, "trusted.pub")
	write := func(data []byte) {
		t.Helper()
		if err := writeAtomic(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(append(read(t, oldPub), read(t, newPub)...))
	v, err := LoadVerifier(path)
	if err != nil {
		t.Fatal(err)
	}
	trusted := func(priv string) bool {
		t.Helper()
		s, err := LoadSigner(priv)
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := s.Sign([]byte("x"))
		return v.Verify([]byte("x"), sig) == nil
	}
	if !trusted(oldPriv) || !trusted(newPriv) || v.Check() != nil || v.LoadErrors() != 0 {
		t.Fatalf("good file: old %v new %v check %v errors %d", trusted(oldPriv), trusted(newPriv), v.Check(), v.LoadErrors())
	}

	// The admin drops the old (compromised) key and the file comes out
	// broken: a private key pasted next to the new public key.
	write(append(read(t, newPub), read(t, oldPriv)...))
	for range 3 {
		if trusted(oldPriv) {
			t.Fatal("a key the broken file no longer lists is still trusted")
		}
	}
	if !trusted(newPriv) {
		t.Fatal("the key the broken file still lists is no longer trusted")
	}
	err = v.Check()
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `PEM block "PRIVATE KEY"`) {
		t.Fatalf("Check() = %v, want the broken file and its fault named", err)
	}
	if n := v.LoadErrors(); n != 1 {
		t.Fatalf("LoadErrors() = %d after one broken content read many times, want 1", n)
	}

	// A file cut before its first block tells nothing: what is trusted
	// stays, reported.
	write([]byte("-----BEGIN PUB"))
	if !trusted(newPriv) || trusted(oldPriv) || v.Check() == nil || v.LoadErrors() != 2 {
		t.Fatalf("cut file: new %v old %v check %v errors %d", trusted(newPriv), trusted(oldPriv), v.Check(), v.LoadErrors())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !trusted(newPriv) || v.Check() == nil || v.LoadErrors() != 3 {
		t.Fatalf("file gone: new %v check %v errors %d", trusted(newPriv), v.Check(), v.LoadErrors())
	}

	// A good file again: reported healthy, the count stays.
	write(append(read(t, oldPub), read(t, newPub)...))
	if !trusted(oldPriv) || !trusted(newPriv) || v.Check() != nil || v.LoadErrors() != 3 {
		t.Fatalf("good file again: old %v new %v check %v errors %d", trusted(oldPriv), trusted(newPriv), v.Check(), v.LoadErrors())
	}
	// A good file that drops a key: not trusted from the next use on.
	write(read(t, newPub))
	if trusted(oldPriv) || !trusted(newPriv) || v.Check() != nil {
		t.Fatalf("good file without the old key: old %v new %v check %v", trusted(oldPriv), trusted(newPriv), v.Check())
	}
}

// TestStillListed: the last good keys a broken file still shows.
func TestStillListed(t *testing.T) {
	dir := t.TempDir()
	_, aPub := pair(t, dir, "a")
	_, bPub := pair(t, dir, "b")
	keysOf := func(path string) []byte { return read(t, path) }
	a, _ := ParsePublicKeys(keysOf(aPub))
	b, _ := ParsePublicKeys(keysOf(bPub))
	last := append(append([]ed25519.PublicKey{}, a...), b...)
	cases := map[string]struct {
		data []byte
		want int // keys kept, from the front of last
		keep []bool
	}{
		"missing":            {nil, 2, []bool{true, true}},
		"not PEM":            {[]byte("garbage"), 2, []bool{true, true}},
		"both listed, junk":  {append(append(keysOf(aPub), keysOf(bPub)...), []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")...), 2, []bool{true, true}},
		"only b listed":      {append(keysOf(bPub), []byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")...), 1, []bool{false, true}},
		"no good key listed": {[]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), 0, []bool{false, false}},
	}
	for name, c := range cases {
		got := StillListed(last, c.data)
		if len(got) != c.want {
			t.Errorf("%s: kept %d keys, want %d", name, len(got), c.want)
			continue
		}
		for i, k := range last {
			kept := false
			for _, g := range got {
				kept = kept || g.Equal(k)
			}
			if kept != c.keep[i] {
				t.Errorf("%s: key %d kept %v, want %v", name, i, kept, c.keep[i])
			}
		}
	}
}
