package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// TestControllerManagerCollectsGarbage proves the harness end to end: the
// CRDs are served and the real garbage collector deletes a dependent whose
// owner is gone.
func TestControllerManagerCollectsGarbage(t *testing.T) {
	env := Start(t, Options{})
	env.StartControllerManager(t, "garbagecollector")
	ctx := context.Background()

	// A cluster-scoped owner, because a cluster-scoped IPClaim may not be
	// owned by a namespaced object other than through the pod rules.
	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "gc-owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	claim := &podnetv1.IPClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "data-192-168-0-10",
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: owner.Name, UID: owner.UID,
			}},
		},
		Spec: podnetv1.IPClaimSpec{
			Network: "data", Address: "192.168.0.10", Interface: "net1",
			Pod: podnetv1.PodReference{Namespace: "default", Name: "p", UID: "u"},
		},
	}
	if err := env.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 60*time.Second, "ipclaim collected", func(ctx context.Context) error {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(claim), &podnetv1.IPClaim{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (err=%v)", err)
	})
}
