package deviceclasses

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=deviceclasses,verbs=get;list;watch;create;update;delete

// DeviceClasses keeps one DeviceClass per DRA-enabled network of each
// NetworkProfile (DesiredDeviceClasses): it creates missing ones, brings
// changed ones back, and deletes those of networks and profiles that are
// gone. It changes and deletes only classes labelled with the profile
// (v1alpha1.DeviceClassProfileLabel); a class of the same name without
// that label is left alone and reported on the profile with a Warning
// Event (ReasonDeviceClassConflict).
type DeviceClasses struct {
	// Client reads from the manager's cache and writes DeviceClasses.
	Client client.Client
	// Events records conflicts on profiles (nil: none).
	Events events.EventRecorder
}

// Reconcile implements reconcile.Reconciler; the request names a profile.
func (r *DeviceClasses) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var profile *v1alpha1.NetworkProfile
	var p v1alpha1.NetworkProfile
	switch err := r.Client.Get(ctx, req.NamespacedName, &p); {
	case err == nil && p.DeletionTimestamp == nil:
		profile = &p
	case err != nil && !apierrors.IsNotFound(err):
		return reconcile.Result{}, fmt.Errorf("NetworkProfile %q: %w", req.Name, err)
	}
	desired, planErr := DesiredDeviceClasses(profile)
	if planErr != nil {
		logf.FromContext(ctx).Error(planErr, "device classes left out", "profile", req.Name)
	}
	var errs []error
	keep := map[string]bool{}
	for i := range desired {
		keep[desired[i].Name] = true
		if err := r.ensure(ctx, profile, &desired[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.deleteStale(ctx, req.Name, keep); err != nil {
		errs = append(errs, err)
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// ensure creates want or brings the profile's class of that name back to
// it; a class of that name the profile does not own is reported, never
// touched.
func (r *DeviceClasses) ensure(ctx context.Context, profile *v1alpha1.NetworkProfile, want *resourceapi.DeviceClass) error {
	var have resourceapi.DeviceClass
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), &have)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create DeviceClass %q: %w", want.Name, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("DeviceClass %q: %w", want.Name, err)
	case !ownsDeviceClass(&have, profile.Name):
		r.conflict(profile, want.Name)
		return nil
	case apiequality.Semantic.DeepEqual(have.Spec, want.Spec):
		return nil
	}
	have.Spec = want.Spec
	if err := r.Client.Update(ctx, &have); err != nil {
		return fmt.Errorf("update DeviceClass %q: %w", want.Name, err)
	}
	return nil
}

// deleteStale deletes the classes labelled with profile that it no
// longer wants (all of them when the profile is gone).
func (r *DeviceClasses) deleteStale(ctx context.Context, profile string, keep map[string]bool) error {
	var list resourceapi.DeviceClassList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{v1alpha1.DeviceClassProfileLabel: profile}); err != nil {
		return fmt.Errorf("list DeviceClasses of profile %q: %w", profile, err)
	}
	var errs []error
	for i := range list.Items {
		c := &list.Items[i]
		if keep[c.Name] {
			continue
		}
		// Preconditioned on the UID seen: a class someone else made
		// since under the same name is not deleted.
		err := r.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete DeviceClass %q: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (r *DeviceClasses) conflict(profile *v1alpha1.NetworkProfile, name string) {
	if r.Events == nil {
		return
	}
	r.Events.Eventf(profile, nil, corev1.EventTypeWarning, ReasonDeviceClassConflict, "Publish",
		"DeviceClass %q exists without label %s=%s: not changed; the profile's network is not offered by that class until it is removed or renamed",
		name, v1alpha1.DeviceClassProfileLabel, profile.Name)
}

// classProfile is the profile a DeviceClass event concerns: its label, or,
// for a class without it, the profile its name would belong to (so that a
// conflicting class's removal lets the profile's class be made).
func classProfile(_ context.Context, o client.Object) []reconcile.Request {
	if p, ok := o.GetLabels()[v1alpha1.DeviceClassProfileLabel]; ok {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: p}}}
	}
	if p, _, ok := v1alpha1.ParseDeviceClassName(o.GetName()); ok {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: p}}}
	}
	return nil
}

// Setup registers the DeviceClasses controller when the API
// server serves resource.k8s.io/v1 DeviceClasses (Kubernetes 1.34 and
// later); on an older one it logs and keeps none.
func Setup(mgr manager.Manager) error {
	gvk := resourceapi.SchemeGroupVersion.WithKind("DeviceClass")
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			mgr.GetLogger().Info("the API server serves no resource.k8s.io/v1 DeviceClasses: none kept for DRA networks")
			return nil
		}
		return fmt.Errorf("deviceclasses controller: %w", err)
	}
	err := builder.ControllerManagedBy(mgr).
		Named("deviceclasses").
		For(&v1alpha1.NetworkProfile{}).
		Watches(&resourceapi.DeviceClass{}, handler.EnqueueRequestsFromMapFunc(classProfile)).
		Complete(&DeviceClasses{Client: mgr.GetClient(), Events: mgr.GetEventRecorder(v1alpha1.ControllerName)})
	if err != nil {
		return fmt.Errorf("deviceclasses controller: %w", err)
	}
	return nil
}
