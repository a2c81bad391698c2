package controller

import (
	"context"
	"fmt"
	"time"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/controller/claimgc"
	"podnet.io/podnet/controller/deviceclasses"
	"podnet.io/podnet/controller/holdchoice"
	"podnet.io/podnet/controller/infocache"
	"podnet.io/podnet/controller/netpolicies"
	"podnet.io/podnet/controller/profilestatus"
	"podnet.io/podnet/controller/resourceclaims"
	"podnet.io/podnet/pkg/nsmeta"
	"podnet.io/podnet/pkg/pagedlist"
)

// Name names the component: its user agent, its leader election lease and
// its log lines (v1alpha1.ControllerName).
const Name = v1alpha1.ControllerName

// The controller's leader election reads and renews one Lease, its own,
// in its own namespace (kustomize moves the Role there). It may not create
// it: RBAC cannot limit a create to a name, so the install creates the
// Lease (deploy/podnet/controller.yaml) and the controller only takes it.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update,resourceNames=podnet-controller,namespace=podnet-system

// CacheOptions drop managedFields from everything cached, list in pages
// each trimmed as it arrives (pkg/pagedlist), keep of namespaces their
// names and labels (pkg/nsmeta), and refuse reads that would start an
// informer nobody planned: pods and IPClaims are not in this cache at all
// (see PodCache and ClaimCache), and a read of them through it fails.
func CacheOptions() cache.Options {
	return cache.Options{
		NewInformer:                 pagedlist.NewInformer,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ReaderFailOnMissingInformer: true,
		ByObject: map[client.Object]cache.ByObject{
			holdchoice.NodeMeta(): {Transform: holdchoice.TrimNodeMeta},
			nsmeta.Object():       {Transform: nsmeta.Trim},
		},
	}
}

// AddToScheme adds to s the kinds the controller reads beyond
// client-go's and podnet's own: MultiNetworkPolicy.
func AddToScheme(s *runtime.Scheme) error {
	if err := mnp.AddToScheme(s); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	return nil
}

// Options tune Setup.
type Options struct {
	// Grace is how long a claim's pod must have been gone before the
	// claim is deleted, and how long a pod must have waited, bound and
	// never started, before the ResourceClaim it waits for is released
	// (ClaimRelease).
	Grace time.Duration
	// Period is how often the whole cache is looked over for claims
	// whose pod is gone (deletions are seen as they happen; this catches
	// those missed while no controller ran).
	Period  time.Duration
	Metrics *Metrics
	// HoldChoiceNamespace is where the choice of --hold-pods=auto is
	// written (HoldChoice); "" writes none.
	HoldChoiceNamespace string
	// StatusBatch is how long a profile's status waits for more claims
	// before it writes their usage (podnet-controller's default:
	// DefaultStatusBatch); zero writes at once.
	StatusBatch time.Duration
}

// DefaultStatusBatch gathers the claims of a burst of pods into one status
// write of each profile offering their network. Every write reaches every
// watcher of NetworkProfiles (each node's agent, each webhook replica), so
// one write per claim would cost a 5,000-node cluster 5,000 watch events
// per pod started. Spec changes (validity, conflicts) are written at once.
const DefaultStatusBatch = 2 * time.Second

// Setup registers the controller's caches (controller/infocache) and its
// reconcilers, each in its room, with mgr.
func Setup(ctx context.Context, mgr manager.Manager, o Options) error {
	pods, err := setupPodCache(mgr)
	if err != nil {
		return err
	}
	claims, err := setupClaimCache(mgr)
	if err != nil {
		return err
	}
	if err := mgr.Add(startMemory{pods: pods, claims: claims}); err != nil {
		return fmt.Errorf("start memory: %w", err)
	}
	gcOpts := claimgc.Options{Grace: o.Grace, Period: o.Period}
	var statusMetrics *profilestatus.Metrics
	if o.Metrics != nil {
		gcOpts.Metrics, statusMetrics = o.Metrics.GC, o.Metrics.Pools
		o.Metrics.macs.from(pods.DuplicateMACs)
	}
	if err := claimgc.Setup(ctx, mgr, pods, claims, gcOpts); err != nil {
		return err
	}
	if err := deviceclasses.Setup(mgr); err != nil {
		return err
	}
	if err := resourceclaims.Setup(mgr, o.Grace); err != nil {
		return err
	}
	if o.HoldChoiceNamespace != "" {
		if err := holdchoice.Setup(mgr, o.HoldChoiceNamespace); err != nil {
			return err
		}
	}
	if err := netpolicies.Setup(mgr, pods, netpolicies.DefaultBatch); err != nil {
		return err
	}
	return profilestatus.Setup(mgr, claims, statusMetrics, o.StatusBatch)
}

// setupPodCache runs the controller's pod cache.
func setupPodCache(mgr manager.Manager) (*infocache.PodCache, error) {
	pods, err := infocache.NewPodCache(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	return pods, infocache.AddToManager(mgr, "pod-cache", pods)
}

// setupClaimCache runs the controller's IPClaim cache.
func setupClaimCache(mgr manager.Manager) (*infocache.ClaimCache, error) {
	claims, err := infocache.NewClaimCache(mgr.GetConfig(), mgr.GetScheme())
	if err != nil {
		return nil, err
	}
	return claims, infocache.AddToManager(mgr, "claim-cache", claims)
}
