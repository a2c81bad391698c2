package dra

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hostdev"
)

// The kubeletplugin helper publishes the node's slices (list and watch
// them by spec.nodeName, create, update, delete; the Node's UID for their
// owner) and reads each claim the kubelet asks it to prepare. That read is
// a get in the claim's namespace, which RBAC cannot narrow to the claims
// of this node's pods (only the Node authorizer knows which pods are
// bound where, and it serves kubelets, not service accounts) nor to
// opted-in namespaces (a label, which RBAC does not read), and admission
// never sees a get: the agent may get any claim, and gets only those its
// kubelet names (no list, no watch).
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceslices,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

// Plugin serves the kubelet plugin on one node and keeps its
// ResourceSlices in step with the NetworkProfiles (manager.Runnable).
type Plugin struct {
	NodeName string
	// KubeletDir is the kubelet's root directory (--root-dir) as the
	// kubelet sees it: the registration socket goes into its
	// plugins_registry, the service socket into plugins/podnet.io. The
	// kubelet dials the path the plugin registers, so the agent must see
	// the folder at the same path.
	KubeletDir string
	Kube       kubernetes.Interface
	// Profiles is the agent's cache of NetworkProfiles.
	Profiles cache.Cache
	// Carries says which networks this node carries; nil: CarryAll.
	Carries Carries
	// NICs are the node's free NICs, for hostDevice networks; nil: none.
	NICs     func() []hostdev.NIC
	Preparer ClaimPreparer
	Log      logr.Logger

	once    sync.Once
	changed chan struct{}
}

// Kick has the node's slices published again: what the node carries
// changed.
func (p *Plugin) Kick() {
	p.init()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

func (p *Plugin) init() { p.once.Do(func() { p.changed = make(chan struct{}, 1) }) }

// Start registers the plugin with the kubelet, publishes this node's
// slices and publishes them again on every profile change, until ctx
// ends.
func (p *Plugin) Start(ctx context.Context) error {
	registry := filepath.Join(p.KubeletDir, "plugins_registry")
	data := filepath.Join(p.KubeletDir, "plugins", v1alpha1.DRADriver)
	for _, d := range []string{registry, data} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("dra kubelet plugin: %w", err)
		}
	}
	helper, err := kubeletplugin.Start(ctx, &Driver{NodeName: p.NodeName, Preparer: p.Preparer, Log: p.Log},
		kubeletplugin.DriverName(v1alpha1.DRADriver),
		kubeletplugin.NodeName(p.NodeName),
		kubeletplugin.KubeClient(p.Kube),
		kubeletplugin.RegistrarDirectoryPath(registry),
		kubeletplugin.PluginDataDirectoryPath(data),
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		return fmt.Errorf("dra kubelet plugin in %s: %w", p.KubeletDir, err)
	}
	defer helper.Stop()
	p.init()
	changed := p.changed
	if err := p.watchProfiles(ctx, changed); err != nil {
		return err
	}
	p.Log.Info("DRA kubelet plugin serving", "driver", v1alpha1.DRADriver, "registry", registry)
	for {
		if err := p.publish(ctx, helper); err != nil {
			p.Log.Error(err, "publish resource slices")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// watchProfiles pokes changed (without blocking: one pending poke is
// enough) on every profile event.
func (p *Plugin) watchProfiles(ctx context.Context, changed chan<- struct{}) error {
	inf, err := p.Profiles.GetInformer(ctx, &v1alpha1.NetworkProfile{})
	if err != nil {
		return fmt.Errorf("dra: profile informer: %w", err)
	}
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	if err != nil {
		return fmt.Errorf("dra: profile informer: %w", err)
	}
	return nil
}

// publish hands the node's devices to the helper, which creates, updates
// and deletes the slices. Networks that cannot be published are logged
// and left out; the others are still published.
func (p *Plugin) publish(ctx context.Context, helper *kubeletplugin.Helper) error {
	var list v1alpha1.NetworkProfileList
	if err := p.Profiles.List(ctx, &list); err != nil {
		return fmt.Errorf("list profiles: %w", err)
	}
	carries := p.Carries
	if carries == nil {
		carries = CarryAll
	}
	var nics []hostdev.NIC
	if p.NICs != nil {
		nics = p.NICs()
	}
	devices, err := NodeDevices(list.Items, carries, nics)
	if err != nil {
		p.Log.Error(err, "networks left out of the node's resource slices")
	}
	return helper.PublishResources(ctx, NodeResources(p.NodeName, devices))
}
