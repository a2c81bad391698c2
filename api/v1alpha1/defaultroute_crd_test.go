package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/test/testenv"
)

// TestCRDDefaultRouteNeedsGateways: a real kube-apiserver refuses a network
// allowed to carry the default route without gateways to route it via, and
// stores one that has them.
func TestCRDDefaultRouteNeedsGateways(t *testing.T) {
	env := testenv.Shared(t)
	ctx := context.Background()
	sample := loadSample(t, env.Root)

	bad := sample.DeepCopy()
	bad.Name = "default-route-without-gateways"
	bad.Spec.Networks[1].DefaultRoute = &v1alpha1.DefaultRoutePolicy{Allowed: true} // uplink: no ipam
	err := env.Client.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "defaultRoute.allowed needs ipam.gateways") {
		t.Fatalf("create = %v, want the CEL refusal naming defaultRoute.allowed and ipam.gateways", err)
	}

	good := sample.DeepCopy()
	good.Name = "default-route-with-gateways"
	good.Spec.Networks[0].DefaultRoute = &v1alpha1.DefaultRoutePolicy{Allowed: true} // data: has gateways
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("create: %v", err)
	}
}
