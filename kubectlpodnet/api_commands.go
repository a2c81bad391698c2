package kubectlpodnet

import (
	"context"
	"fmt"
	"io"
	"strings"

	mnp "github.com/k8snetworkplumbingwg/multi-networkpolicy/pkg/apis/k8s.cni.cncf.io/v1beta1"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/policy"
)

// agentNameLabel is the label the agent DaemonSet's pods carry
// (deploy/podnet/agent.yaml).
const agentNameLabel = "app.kubernetes.io/name"

func (o *options) explainCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "explain POD",
		Short: "What a pod asked for, what was approved and attached, and why it is not ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.connect()
			if err != nil {
				return err
			}
			f, err := gatherPod(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			e := explainPod(f)
			return o.print(e, func(w io.Writer) error { return writeExplain(w, e) })
		},
	}
}

// gatherPod reads the pod, its namespace's labels, its Events and whether
// an agent is ready on its node. Only the pod is required: what the caller
// may not read is left unknown.
func gatherPod(ctx context.Context, c client.Client, ns, name string) (PodFacts, error) {
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return PodFacts{}, fmt.Errorf("pod %s/%s: %w", ns, name, err)
	}
	f := PodFacts{Pod: pod}
	nsObj := &corev1.Namespace{}
	switch err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); {
	case err == nil:
		f.NamespaceLabels = nsObj.Labels
	case apierrors.IsForbidden(err):
		f.NamespaceUnknown = true
	default:
		return f, fmt.Errorf("namespace %s: %w", ns, err)
	}
	events := &corev1.EventList{}
	sel := fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID))
	if err := c.List(ctx, events, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: sel}); err != nil && !apierrors.IsForbidden(err) {
		return f, fmt.Errorf("events of pod %s/%s: %w", ns, name, err)
	}
	f.Events = events.Items
	claims, err := gatherClaims(ctx, c, pod)
	if err != nil {
		return f, err
	}
	f.Claims = claims
	if pod.Spec.NodeName != "" {
		f.AgentReady = agentReady(ctx, c, pod.Spec.NodeName)
	}
	f.Policies, f.Profiles, f.PoliciesUnknown = gatherPodPolicies(ctx, c, ns)
	return f, nil
}

// gatherPodPolicies reads the namespace's MultiNetworkPolicies and the
// profiles; unknown when the caller may not read them or the API serves
// no MultiNetworkPolicies.
func gatherPodPolicies(ctx context.Context, c client.Client, ns string) ([]mnp.MultiNetworkPolicy, []v1alpha1.NetworkProfile, bool) {
	var policies mnp.MultiNetworkPolicyList
	if err := c.List(ctx, &policies, client.InNamespace(ns)); err != nil {
		return nil, nil, true
	}
	var profiles v1alpha1.NetworkProfileList
	if err := c.List(ctx, &profiles); err != nil {
		return nil, nil, true
	}
	return policies.Items, profiles.Items, false
}

// agentReady says whether a Ready podnet-agent pod runs on node; nil when
// the caller may not list the agent's pods.
func agentReady(ctx context.Context, c client.Client, node string) *bool {
	pods := &corev1.PodList{}
	err := c.List(ctx, pods, client.InNamespace(v1alpha1.SystemNamespace),
		client.MatchingLabels{agentNameLabel: v1alpha1.AgentName},
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", node)})
	if err != nil {
		return nil
	}
	ready := false
	for i := range pods.Items {
		if c := condition(&pods.Items[i], corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	return &ready
}

func (o *options) canICommand() *cobra.Command {
	sa := v1alpha1.DefaultServiceAccount
	var traffic trafficFlags
	cmd := &cobra.Command{
		Use:   "can-i (REQUEST | POD --network NETWORK (--from PEER | --to PEER) [--port tcp/80])",
		Short: "The webhook's decision for a podnet.io/networks request, by a server-side dry run; with --network, whether policy lets a pod's traffic with a peer pass, as `policy` answers (exit 0 allowed, 1 denied, 2 error)",
		Example: `  kubectl podnet can-i -n tenant-a 'data@net1, extra'
  kubectl podnet can-i -n tenant-a --service-account cnf '[{"name":"data","mtu":9000}]' -o yaml
  kubectl podnet can-i -n tenant-a web --network data --from tenant-b/client --port tcp/80`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case traffic.network != "":
				return o.runPolicy(cmd.Context(), args[0], traffic)
			case traffic.from != "" || traffic.to != "":
				return &exitError{code: exitFailed, err: fmt.Errorf("--from and --to ask about traffic on a network: give --network")}
			}
			c, ns, err := o.connect()
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			r, err := canI(cmd.Context(), c, ns, sa, args[0])
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if err := o.print(r, func(w io.Writer) error { return writeCanI(w, r) }); err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			if code := r.exitCode(); code != exitAllowed {
				return &exitError{code: code}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&sa, "service-account", sa, "service account the pod would run as")
	traffic.add(cmd)
	return cmd
}

// canI creates the minimal pod with dryRun=All as the caller: the API
// server runs admission, the webhook included, and stores nothing.
func canI(ctx context.Context, c client.Client, ns, sa, request string) (CanIResult, error) {
	r := CanIResult{Namespace: ns, ServiceAccount: sa, Request: request}
	pod := canIPod(ns, sa, request)
	err := c.Create(ctx, pod, client.DryRunAll)
	if err != nil {
		if isAdmissionDenial(err) {
			r.Message = err.Error()
			return r, nil
		}
		return r, fmt.Errorf("dry-run create of a pod in namespace %s: %w", ns, err)
	}
	nsObj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil && !apierrors.IsForbidden(err) {
		return r, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return canIFromPod(r, pod, nsObj.Labels), nil
}

// isAdmissionDenial tells a webhook's refusal from other failures (RBAC,
// a missing namespace, a webhook that cannot be reached).
func isAdmissionDenial(err error) bool {
	msg := err.Error()
	return (apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)) &&
		strings.Contains(msg, "admission webhook") && strings.Contains(msg, "denied the request")
}

func (o *options) networksCommand() *cobra.Command {
	sa := v1alpha1.DefaultServiceAccount
	cmd := &cobra.Command{
		Use:   "networks",
		Short: "The networks a namespace may ask for, with their limits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := o.connect()
			if err != nil {
				return err
			}
			in, err := gatherPolicyInput(cmd.Context(), c, ns, sa)
			if err != nil {
				return err
			}
			offers := policy.OfferList(in)
			return o.print(offers, func(w io.Writer) error { return writeNetworks(w, offers) })
		},
	}
	cmd.Flags().StringVar(&sa, "service-account", sa, "service account of the pods (profiles may name some)")
	return cmd
}

// gatherPolicyInput reads what pkg/policy decides on for a namespace: the
// namespace's labels and every NetworkProfile.
func gatherPolicyInput(ctx context.Context, c client.Client, ns, sa string) (policy.Input, error) {
	nsObj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, nsObj); err != nil {
		return policy.Input{}, fmt.Errorf("namespace %s: %w", ns, err)
	}
	profiles := &v1alpha1.NetworkProfileList{}
	if err := c.List(ctx, profiles); err != nil {
		return policy.Input{}, fmt.Errorf("list networkprofiles: %w", err)
	}
	pod := &corev1.Pod{}
	pod.Namespace = ns
	pod.Spec.ServiceAccountName = sa
	return policy.Input{Namespace: nsObj, Pod: pod, Profiles: profiles.Items}, nil
}

func (o *options) poolsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pools",
		Short: "Per profile, network and pool: size, addresses in use and free, fullest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := o.connect()
			if err != nil {
				return err
			}
			profiles := &v1alpha1.NetworkProfileList{}
			if err := c.List(cmd.Context(), profiles); err != nil {
				return fmt.Errorf("list networkprofiles: %w", err)
			}
			claims := &v1alpha1.IPClaimList{}
			if err := c.List(cmd.Context(), claims); err != nil {
				return fmt.Errorf("list ipclaims: %w", err)
			}
			rows := poolUsage(profiles.Items, claims.Items)
			return o.print(rows, func(w io.Writer) error { return writePools(w, rows) })
		},
	}
}
