package testenv

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// RunManager starts mgr under a child of ctx until the test ends; the
// cleanup stops it and reports the error it stopped with, so no manager
// outlives its test.
func RunManager(t testing.TB, ctx context.Context, mgr manager.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}
