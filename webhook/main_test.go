package webhook_test

import (
	"os"
	"testing"

	"podnet.io/podnet/test/testenv"
)

// Some integration tests share one API server (startSharedHarnessWith,
// testenv.SharedWith).
func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }
