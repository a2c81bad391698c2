package agent

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// otherSignature signs payload with a fresh key nobody trusts, encoded as
// the webhook encodes its signatures.
func otherSignature(t *testing.T, payload string) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(payload)))
}
