package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/deviceclasses"
	"podnet.io/podnet/test/testenv"
)

// TestIntegrationDeviceClassesFollowProfiles: on a real API server the
// controller creates a DeviceClass for each DRA-enabled network of a
// profile, brings an edited one back, deletes it when the network leaves
// the dra block and when the profile goes; a DeviceClass of the same name
// without the profile label is never changed nor deleted, and the profile
// gets a DeviceClassConflict Event.
func TestIntegrationDeviceClassesFollowProfiles(t *testing.T) {
	// Its own API server: its DeviceClasses are cluster-scoped, fixed names that outlive it (the foreign one), and it finds its Event by the profile's name among all.
	env := testenv.Start(t, testenv.Options{})
	c := env.Client
	ctx := context.Background()
	foreign := &resourceapi.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "taken.telco"},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "other.example.com"`}}}}}
	if err := c.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	startController(t, env, time.Second)
	p := &v1alpha1.NetworkProfile{ObjectMeta: metav1.ObjectMeta{Name: "telco"}, Spec: v1alpha1.NetworkProfileSpec{
		NamespaceSelector: metav1.LabelSelector{},
		Networks: []v1alpha1.Network{
			{Name: "data", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-data"}, DRA: &v1alpha1.DRAOffer{AttachmentsPerNode: 2}},
			{Name: "taken", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-taken"}, DRA: &v1alpha1.DRAOffer{}},
			{Name: "plain", Bridge: &v1alpha1.BridgeNetwork{Name: "pnbr-plain"}},
		}}}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	want, err := deviceclasses.DesiredDeviceClasses(p)
	if err != nil {
		t.Fatal(err)
	}
	class := func(name string) (*resourceapi.DeviceClass, error) {
		var dc resourceapi.DeviceClass
		err := c.Get(ctx, client.ObjectKey{Name: name}, &dc)
		return &dc, err
	}
	selectorIs := func(name, expr string) error {
		dc, err := class(name)
		if err != nil {
			return err
		}
		if got := dc.Spec.Selectors[0].CEL.Expression; got != expr {
			return fmt.Errorf("DeviceClass %s selects %s, want %s", name, got, expr)
		}
		return nil
	}
	testenv.Eventually(t, time.Minute, "DeviceClass data.telco created", func(context.Context) error {
		return selectorIs("data.telco", want[0].Spec.Selectors[0].CEL.Expression)
	})
	testenv.Eventually(t, time.Minute, "a DeviceClassConflict Event on the profile", func(ctx context.Context) error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == deviceclasses.ReasonDeviceClassConflict && e.Regarding.Name == "telco" && e.Type == corev1.EventTypeWarning {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(evs.Items))
	})

	// An edited class is brought back.
	dc, err := class("data.telco")
	if err != nil {
		t.Fatal(err)
	}
	dc.Spec.Selectors[0].CEL.Expression = "true"
	if err := c.Update(ctx, dc); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "edited DeviceClass brought back", func(context.Context) error {
		return selectorIs("data.telco", want[0].Spec.Selectors[0].CEL.Expression)
	})

	// The network leaves DRA: its class goes; then the profile goes.
	setDRA := func(dra *v1alpha1.DRAOffer) {
		t.Helper()
		// The status reconciler writes the profile too.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			p.Spec.Networks[0].DRA = dra
			return c.Update(ctx, p)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setDRA(nil)
	gone := func(name string) error {
		if _, err := class(name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("DeviceClass %s still there (%v)", name, err)
		}
		return nil
	}
	testenv.Eventually(t, time.Minute, "DeviceClass of a network without dra deleted", func(context.Context) error { return gone("data.telco") })
	setDRA(&v1alpha1.DRAOffer{})
	testenv.Eventually(t, time.Minute, "DeviceClass made again", func(context.Context) error {
		return selectorIs("data.telco", want[0].Spec.Selectors[0].CEL.Expression)
	})
	if err := c.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "DeviceClasses of a deleted profile deleted", func(context.Context) error { return gone("data.telco") })

	// The foreign class of a name the profile wanted is untouched.
	got, err := class("taken.telco")
	if err != nil {
		t.Fatalf("foreign DeviceClass: %v", err)
	}
	if got.ResourceVersion != foreign.ResourceVersion {
		t.Errorf("foreign DeviceClass changed: resourceVersion %s, was %s", got.ResourceVersion, foreign.ResourceVersion)
	}
}
