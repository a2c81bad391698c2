package v1alpha1_test

import (
	"os"
	"testing"

	"podnet.io/podnet/test/testenv"
)

// The CRD tests share one API server (testenv.Shared).
func TestMain(m *testing.M) { os.Exit(testenv.RunShared(m)) }
