package ipam_test

import (
	"os"
	"testing"

	"podnet.io/podnet/test/testenv"
)

// The integration tests share one API server (sharedEnv, testenv.Shared).
func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }
