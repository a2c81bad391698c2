package uninstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"podnet.io/podnet/api/v1alpha1"
)

// The agent reads its own DaemonSet, and nothing else of its namespace,
// for the uninstall mark (a LIST or WATCH with a metadata.name field
// selector is authorized against resourceNames).
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch,resourceNames=podnet-agent,namespace=podnet-system

// NodeRemover removes what podnet made on the node; *dataplane.Dataplane
// is the real one.
type NodeRemover interface {
	RemoveNode(ctx context.Context) ([]string, error)
}

// NodeLabels are labels podnet keeps on the agent's Node (the carry
// labels, the NRI hold label): an uninstall takes them off, and a mark
// taken back puts them back.
type NodeLabels interface {
	// Unlabel removes them; while Underway, their writer keeps them off.
	Unlabel(ctx context.Context) error
	// Relabel asks for them again.
	Relabel()
}

// OverlayStopper takes the node's overlays (tunnel table, VNI annotation)
// off and puts them back; *peers.Watch is the real one.
type OverlayStopper interface {
	Stop(ctx context.Context) error
	Resume()
}

// Uninstall watches the agent's own DaemonSet for the uninstall mark
// (v1alpha1.UninstallAnnotation). While the mark is there the pod
// reconciler attaches nothing and detaches every pod of the node through
// its usual detach (interfaces, node ends, addresses); once every pod is
// done, Uninstall removes what podnet made on the node (links, nftables
// tables, the VNI annotation, files, podnet's Node labels) and reports it
// on the Node (v1alpha1.AgentUninstalledAnnotation). Deleting the DaemonSet is not the
// signal: an agent stopping or being replaced changes nothing on the node.
type Uninstall struct {
	// DaemonSet is the agent's own.
	DaemonSet types.NamespacedName
	NodeName  string
	// Reader reads the DaemonSet and the node's pods (the manager's
	// cache); Writer patches the Node.
	Reader client.Reader
	Writer client.Writer
	Node   NodeRemover
	// Overlays may be nil (no VXLAN support wired).
	Overlays OverlayStopper
	// Files are the files podnet made on the node (the CNI socket),
	// removed at the end.
	Files []string
	// Labels are podnet's labels of the Node, removed at the end.
	Labels []NodeLabels

	// Pods carries the pods the uninstall wants the pod reconcile to
	// look at (Source); SetupWithManager makes it when nil.
	Pods chan crevent.GenericEvent

	mu sync.Mutex
	// run is the mark being carried out ("" none); reported says its node
	// part is done and on the Node.
	run      string
	reported bool
	// finished are the pods detached for run.
	finished map[types.UID]bool
}

// WatchDaemonSet makes the cache hold the one DaemonSet, by name.
func WatchDaemonSet(opts *cache.Options, ds types.NamespacedName) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	opts.ByObject[&appsv1.DaemonSet{}] = cache.ByObject{
		Namespaces: map[string]cache.Config{ds.Namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", ds.Name),
		Transform:  trimDaemonSet,
	}
}

// trimDaemonSet keeps of the agent's DaemonSet what the uninstall reads:
// its identity and annotations. Its pod template and status are most of
// it, and every pod reconcile asks whether the mark is on (Marked).
func trimDaemonSet(obj any) (any, error) {
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return obj, nil
	}
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{
		Name: ds.Name, Namespace: ds.Namespace, UID: ds.UID, ResourceVersion: ds.ResourceVersion,
		Generation: ds.Generation, Annotations: ds.Annotations,
	}}, nil
}

// SetupWithManager starts the DaemonSet informer (so the cache sync that
// readiness waits for includes it) and the uninstall controller. The pod
// reconcile is given the Uninstall (agent.Reconciler.Uninstall) before its
// own SetupWithManager, which watches Source.
func (u *Uninstall) SetupWithManager(mgr manager.Manager) error {
	if u.DaemonSet.Name == "" || u.DaemonSet.Namespace == "" || u.NodeName == "" {
		return errors.New("agent uninstall: daemonset namespace, name and node name must be set")
	}
	if _, err := mgr.GetCache().GetInformer(context.Background(), &appsv1.DaemonSet{}); err != nil {
		return fmt.Errorf("agent uninstall: daemonset informer: %w", err)
	}
	if u.Reader == nil {
		u.Reader = mgr.GetCache()
	}
	if u.Writer == nil {
		u.Writer = mgr.GetClient()
	}
	if u.Pods == nil {
		u.Pods = make(chan crevent.GenericEvent, 1024)
	}
	err := builder.ControllerManagedBy(mgr).Named(v1alpha1.AgentName + "-uninstall").For(&appsv1.DaemonSet{}).Complete(u)
	if err != nil {
		return fmt.Errorf("agent uninstall controller: %w", err)
	}
	return nil
}

// Marked reports whether the uninstall mark is on the DaemonSet, from the
// cache; a nil Uninstall never is. It only reads the DaemonSet's
// annotations, so the cache's object is not copied.
func (u *Uninstall) Marked(ctx context.Context) (bool, error) {
	if u == nil {
		return false, nil
	}
	var ds appsv1.DaemonSet
	if err := u.Reader.Get(ctx, u.DaemonSet, &ds, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("daemonset %s: %w", u.DaemonSet, err)
	}
	_, marked := ds.Annotations[v1alpha1.UninstallAnnotation]
	return marked, nil
}

// Source feeds the pod controller the pods the uninstall wants looked at,
// through h.
func (u *Uninstall) Source(h handler.EventHandler) source.Source {
	return source.Channel(u.Pods, h)
}

// Reconcile carries out the mark on the DaemonSet, or undoes it when the
// mark is gone.
func (u *Uninstall) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var ds appsv1.DaemonSet
	if err := u.Reader.Get(ctx, u.DaemonSet, &ds); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	run, marked := ds.Annotations[v1alpha1.UninstallAnnotation]
	if !marked {
		return reconcile.Result{}, u.resume(ctx)
	}
	log := logf.FromContext(ctx)
	if u.begin(run) {
		log.Info("uninstall mark seen: attaching nothing, detaching every pod", "mark", run)
		if err := u.enqueueAll(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	if u.isReported() {
		return reconcile.Result{}, nil
	}
	pending, err := u.pending(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(pending) > 0 {
		log.V(1).Info("waiting for pods to be detached", "pods", pending)
		return reconcile.Result{RequeueAfter: time.Second}, u.enqueue(ctx, pending)
	}
	removed, err := u.removeNode(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("uninstall: node %q: %w", u.NodeName, err)
	}
	if err := u.patchNode(ctx, string(ds.UID)); err != nil {
		return reconcile.Result{}, err
	}
	u.setReported(run)
	log.Info("uninstalled from the node", "removed", removed)
	return reconcile.Result{}, nil
}

// begin notes the mark run; it reports whether run is new.
func (u *Uninstall) begin(run string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.run == run && u.finished != nil {
		return false
	}
	u.run, u.reported, u.finished = run, false, map[types.UID]bool{}
	return true
}

func (u *Uninstall) isReported() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.reported
}

func (u *Uninstall) setReported(run string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.run == run {
		u.reported = true
	}
}

// IsFinished reports whether the pod was detached for the current run.
func (u *Uninstall) IsFinished(uid types.UID) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.finished[uid]
}

// Finish notes the pod as detached for the current run.
func (u *Uninstall) Finish(uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.finished != nil {
		u.finished[uid] = true
	}
}

// resume undoes a run whose mark was taken back: the overlays come back,
// the node's report goes, and every pod is attached again.
func (u *Uninstall) resume(ctx context.Context) error {
	u.mu.Lock()
	was, reported := u.finished != nil, u.reported
	u.run, u.reported, u.finished = "", false, nil
	u.mu.Unlock()
	if !was {
		return nil
	}
	logf.FromContext(ctx).Info("uninstall mark taken back: attaching again")
	if u.Overlays != nil {
		u.Overlays.Resume()
	}
	for _, l := range u.Labels {
		l.Relabel()
	}
	var err error
	if reported {
		err = u.patchNode(ctx, nil)
	}
	return errors.Join(err, u.enqueueAll(ctx))
}

// pending are the node's pods that hold podnet state and were not yet
// detached for this run.
func (u *Uninstall) pending(ctx context.Context) ([]types.NamespacedName, error) {
	var pods corev1.PodList
	if err := u.Reader.List(ctx, &pods); err != nil {
		return nil, fmt.Errorf("list pods of node %q: %w", u.NodeName, err)
	}
	var out []types.NamespacedName
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == u.NodeName && HoldsPodnet(p) && !u.IsFinished(p.UID) {
			out = append(out, client.ObjectKeyFromObject(p))
		}
	}
	return out, nil
}

// enqueueAll hands every pod of the node to the pod controller.
func (u *Uninstall) enqueueAll(ctx context.Context) error {
	var pods corev1.PodList
	if err := u.Reader.List(ctx, &pods); err != nil {
		return fmt.Errorf("list pods of node %q: %w", u.NodeName, err)
	}
	keys := make([]types.NamespacedName, 0, len(pods.Items))
	for i := range pods.Items {
		if pods.Items[i].Spec.NodeName == u.NodeName {
			keys = append(keys, client.ObjectKeyFromObject(&pods.Items[i]))
		}
	}
	return u.enqueue(ctx, keys)
}

func (u *Uninstall) enqueue(ctx context.Context, keys []types.NamespacedName) error {
	for _, k := range keys {
		select {
		case u.Pods <- crevent.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name}}}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// removeNode removes podnet's links and port rules, then its tunnel table
// and VNI annotation (the VXLAN devices are gone by then, so no tunnel is
// ever open to all), then its files.
func (u *Uninstall) removeNode(ctx context.Context) ([]string, error) {
	removed, err := u.Node.RemoveNode(ctx)
	errs := []error{err}
	if u.Overlays != nil {
		errs = append(errs, u.Overlays.Stop(ctx))
	}
	for _, f := range u.Files {
		errs = append(errs, removeFile(f))
	}
	for _, l := range u.Labels {
		errs = append(errs, l.Unlabel(ctx))
	}
	return removed, errors.Join(errs...)
}

// Underway says whether an uninstall mark is being carried out: the
// writers of the Node's labels (Labels) then remove rather than write
// them. False on a nil *Uninstall (an agent not watching for the mark).
func (u *Uninstall) Underway() bool {
	if u == nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.run != ""
}

// removeFile removes a file the agent made, and its folder when nothing
// else is in it. A folder mounted from the node (EBUSY, or EROFS on the
// agent's read-only root) stays: the kubelet made it for the hostPath
// volume, and it is an empty folder on the node's tmpfs.
func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %q: %w", path, err)
	}
	dir := filepath.Dir(path)
	err := os.Remove(dir)
	for _, fine := range []error{os.ErrNotExist, unix.ENOTEMPTY, unix.EEXIST, unix.EBUSY, unix.EROFS} {
		if err == nil || errors.Is(err, fine) {
			return nil
		}
	}
	return fmt.Errorf("remove folder %q: %w", dir, err)
}

// patchNode sets (a string) or removes (nil) the node's report.
func (u *Uninstall) patchNode(ctx context.Context, value any) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{v1alpha1.AgentUninstalledAnnotation: value}}})
	if err != nil {
		return fmt.Errorf("node %q: %w", u.NodeName, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: u.NodeName}}
	if err := u.Writer.Patch(ctx, node, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("node %q: annotate %s: %w", u.NodeName, v1alpha1.AgentUninstalledAnnotation, err)
	}
	return nil
}

// HoldsPodnet reports whether podnet may have attached something to the
// pod or written its status: it asks, holds an approval, or carries
// podnet's status or condition. Pods of the node's network are never
// podnet's.
func HoldsPodnet(pod *corev1.Pod) bool {
	if pod.Spec.HostNetwork {
		return false
	}
	for _, k := range []string{v1alpha1.NetworksAnnotation, v1alpha1.ApprovedAnnotation, v1alpha1.NetworkStatusAnnotation} {
		if _, ok := pod.Annotations[k]; ok {
			return true
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1alpha1.NetworksReadyCondition {
			return true
		}
	}
	return false
}
