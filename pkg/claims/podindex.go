package claims

import (
	"context"
	"fmt"
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
)

// PodIndex is the name of an informer index of claims by their pod UID
// label (v1alpha1.PodUIDLabel). Without it, listing one pod's claims
// from a cache matches the label against every claim of the node: a
// scan per attach that grows with the node's pods, a burst's attaches
// together with their square.
const PodIndex = "podnet.io/pod-uid-label"

// IndexByPod registers PodIndex for obj's kind with indexer (a manager's
// GetFieldIndexer), before the cache starts.
func IndexByPod(ctx context.Context, indexer client.FieldIndexer, obj client.Object) error {
	err := indexer.IndexField(ctx, obj, PodIndex, func(o client.Object) []string {
		if uid := o.GetLabels()[v1alpha1.PodUIDLabel]; uid != "" {
			return []string{uid}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index %T by pod UID: %w", obj, err)
	}
	return nil
}

// OfPod are the options that list the claims of the pod uid with the
// labels also set: through PodIndex when the reader has it (indexed),
// else by the pod UID label. Either way the same claims come back.
func OfPod(uid string, indexed bool, labels client.MatchingLabels) []client.ListOption {
	if indexed {
		opts := []client.ListOption{client.MatchingFields{PodIndex: uid}}
		if len(labels) > 0 {
			opts = append(opts, labels)
		}
		return opts
	}
	all := client.MatchingLabels{v1alpha1.PodUIDLabel: uid}
	maps.Copy(all, labels)
	return []client.ListOption{all}
}
