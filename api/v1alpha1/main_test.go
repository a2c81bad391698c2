package v1alpha1_test

import (
	"os"
	"strings"
	"testing"

	"podnet.io/podnet/test/testenv"
)

// The CRD tests share one API server (testenv.Shared).
func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }

// expectAdmission checks the API server's answer to a create: accepted
// when want is nil, else refused with a message saying each of want.
func expectAdmission(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not say %q", err, w)
		}
	}
}
