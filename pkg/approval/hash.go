package approval

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashRequest is the Approval.RequestHash of a NetworksAnnotation value: the
// hex SHA-256 of its exact bytes. The webhook and the agent both compute it
// here so that the binding between a request and its approval can never
// drift between the two.
func HashRequest(annotation string) string {
	sum := sha256.Sum256([]byte(annotation))
	return hex.EncodeToString(sum[:])
}
