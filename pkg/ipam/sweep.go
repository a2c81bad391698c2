package ipam

import (
	"context"
	"errors"
	"fmt"

	"podnet.io/podnet/api/v1alpha1"
)

// Sweep deletes every claim whose pod no longer exists, cluster-wide, and
// returns how many it deleted. podExists is called once per distinct pod UID
// and must read from the API server, not a cache (Allocator.PodAlive does),
// because a cache that has not yet seen a new pod would make its claims look
// dead. Any number of agents may sweep at once: each delete carries the
// claim's UID as a precondition, so a sweep never removes a claim that was
// re-created on the same name after it looked. Failures are collected, not
// fatal: one unreadable pod does not stop the rest of the sweep.
func (a *Allocator) Sweep(ctx context.Context, podExists func(ctx context.Context, namespace, name, uid string) (bool, error)) (int, error) {
	var list v1alpha1.IPClaimList
	if err := a.r.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("list IPClaims: %w", err)
	}
	byPod := map[v1alpha1.PodReference][]*v1alpha1.IPClaim{}
	for i := range list.Items {
		p := list.Items[i].Spec.Pod
		byPod[p] = append(byPod[p], &list.Items[i])
	}
	deleted := 0
	var errs []error
	for pod, claims := range byPod {
		if err := ctx.Err(); err != nil {
			return deleted, errors.Join(append(errs, err)...)
		}
		exists, err := podExists(ctx, pod.Namespace, pod.Name, pod.UID)
		if err != nil {
			errs = append(errs, fmt.Errorf("check pod %s/%s (UID %s): %w", pod.Namespace, pod.Name, pod.UID, err))
			continue
		}
		if exists {
			continue
		}
		a.forget(pod.UID, func(v1alpha1.IPClaimSpec) bool { return true })
		for _, c := range claims {
			if err := a.deleteClaims(ctx, []*v1alpha1.IPClaim{c}); err != nil {
				errs = append(errs, err)
				continue
			}
			deleted++
		}
	}
	return deleted, errors.Join(errs...)
}
