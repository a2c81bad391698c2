package holdchoice

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

// The hold choice of --hold-pods=auto is made once for the cluster, here:
// the controller counts the Nodes and those whose agent reported NRI
// enforced (v1alpha1.NodeHoldNRILabel), through a metadata-only informer
// that keeps of each Node its name and that label, and writes
// hold.ChooseAuto's answer on the ConfigMap
// v1alpha1.HoldChoiceConfigMap, which the webhook watches.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create,namespace=podnet-system
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;patch,resourceNames=podnet-hold-choice,namespace=podnet-system

// NodeMeta is the Node as the hold choice's informer lists it.
func NodeMeta() *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}}
}

// TrimNodeMeta keeps of a Node only its name and its hold label: with
// thousands of nodes the controller keeps a count, not their annotations.
func TrimNodeMeta(obj any) (any, error) {
	n, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion}}
	if v, ok := n.Labels[v1alpha1.NodeHoldNRILabel]; ok {
		out.Labels = map[string]string{v1alpha1.NodeHoldNRILabel: v}
	}
	return out, nil
}

// countHoldNodes counts the nodes and those reporting NRI enforced.
func countHoldNodes(nodes []metav1.PartialObjectMetadata) (all, enforced int) {
	for _, n := range nodes {
		if n.Labels[v1alpha1.NodeHoldNRILabel] == v1alpha1.NodeHoldNRIEnforced {
			enforced++
		}
	}
	return len(nodes), enforced
}

// holdChoiceAnnotations is what the ConfigMap says for a cluster of all
// nodes, enforced of them reporting NRI enforced.
func holdChoiceAnnotations(all, enforced int) map[string]string {
	return map[string]string{
		v1alpha1.HoldChoiceAnnotation:         string(hold.ChooseAuto(all, enforced)),
		v1alpha1.HoldChoiceNodesAnnotation:    strconv.Itoa(all),
		v1alpha1.HoldChoiceEnforcedAnnotation: strconv.Itoa(enforced),
	}
}

// HoldChoice writes the cluster's choice for --hold-pods=auto.
type HoldChoice struct {
	// Nodes lists the Nodes' metadata (the manager's cache).
	Nodes client.Reader
	// Client writes the ConfigMap; APIReader reads it, uncached.
	Client    client.Client
	APIReader client.Reader
	Namespace string
}

// holdChoiceKey is the one request every Node event maps to.
var holdChoiceKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: v1alpha1.HoldChoiceConfigMap}}

// Reconcile counts the Nodes and writes the choice when it changed.
func (h *HoldChoice) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "NodeList"}}
	if err := h.Nodes.List(ctx, list); err != nil {
		return reconcile.Result{}, fmt.Errorf("hold choice: list nodes: %w", err)
	}
	return reconcile.Result{}, h.write(ctx, holdChoiceAnnotations(countHoldNodes(list.Items)))
}

// write puts want on the ConfigMap, creating it when missing.
func (h *HoldChoice) write(ctx context.Context, want map[string]string) error {
	key := client.ObjectKey{Namespace: h.Namespace, Name: v1alpha1.HoldChoiceConfigMap}
	var cm corev1.ConfigMap
	err := h.APIReader.Get(ctx, key, &cm)
	if apierrors.IsNotFound(err) {
		cm = corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: want}}
		if err := h.Client.Create(ctx, &cm); err != nil {
			return fmt.Errorf("hold choice: create ConfigMap %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("hold choice: get ConfigMap %s: %w", key, err)
	}
	same := true
	for k, v := range want {
		same = same && cm.Annotations[k] == v
	}
	if same {
		return nil
	}
	patch := client.MergeFrom(cm.DeepCopy())
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	for k, v := range want {
		cm.Annotations[k] = v
	}
	if err := h.Client.Patch(ctx, &cm, patch); err != nil {
		return fmt.Errorf("hold choice: patch ConfigMap %s: %w", key, err)
	}
	return nil
}

// holdLabelChanged passes Node events that can change the count: a node
// added or removed, or its hold label changed.
var holdLabelChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetLabels()[v1alpha1.NodeHoldNRILabel] != e.ObjectNew.GetLabels()[v1alpha1.NodeHoldNRILabel]
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// Setup registers the hold choice with mgr, writing into
// namespace.
func Setup(mgr manager.Manager, namespace string) error {
	h := &HoldChoice{Nodes: mgr.GetCache(), Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Namespace: namespace}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{holdChoiceKey}
	})
	err := builder.ControllerManagedBy(mgr).
		Named("hold-choice").
		WatchesMetadata(NodeMeta(), one, builder.WithPredicates(holdLabelChanged)).
		Complete(h)
	if err != nil {
		return fmt.Errorf("hold-choice controller: %w", err)
	}
	return nil
}
