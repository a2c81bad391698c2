package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/carry"
	"podnet.io/podnet/pkg/portsecurity"
	"podnet.io/podnet/pkg/underlay"
)

// uninstallKinds are the networks TestRootUninstall runs pods on besides
// the e2e and span profiles' (bridge, bridge spanned by an uplink and by
// VXLAN, macvlan): a VLAN and an ipvlan network on the data NIC, each only
// where the kernel has the link kind (a kernel without it cannot attach
// them, and then has nothing of them to clean up).
var uninstallKinds = []struct{ network, feature, spec string }{
	{"un-vlan", "vlan", fmt.Sprintf("vlan: {master: %s, vlan: {default: 120, allowed: [\"120\"]}}", localcluster.DataNIC)},
	{"un-ipvlan", "ipvlan", fmt.Sprintf("ipvlan: {master: %s, mode: l2}", localcluster.DataNIC)},
}

// applyUninstallKinds adds a profile of the networks of uninstallKinds
// the kernel has, and a pod of each on node.
func (s *suite) applyUninstallKinds(t *testing.T, apps map[string]string, node string) {
	t.Helper()
	var networks []string
	for _, k := range uninstallKinds {
		if !kernelHasLink(t, k.feature, kindArgs[k.feature]...) {
			t.Logf("this kernel has no %s links: no %s pod (pkg/dataplane's root tests of the kind, TestRootEveryKindLifecycle and TestRootRemoveNodeTakesVLANSubinterfaces, run in the kernel VM stage)", k.feature, k.network)
			continue
		}
		networks = append(networks, fmt.Sprintf("  - name: %s\n    %s\n", k.network, k.spec))
		app := "app-" + k.network
		apps[app] = k.network
		defer s.apply(t, deployment(app, node, k.network, 1))
	}
	if len(networks) == 0 {
		return
	}
	s.apply(t, `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-uninstall-kinds}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
`+strings.Join(networks, ""))
}

// kindArgs are what ip link add needs beyond the kind to make one.
var kindArgs = map[string][]string{"vlan": {"id", "5"}}

// checkSomethingToClean makes sure the checks after the uninstall can
// fail: podnet links and tables on both nodes, claims and annotations in
// the API.
func (s *suite) checkSomethingToClean(t *testing.T) {
	t.Helper()
	for _, n := range s.cluster.Nodes {
		if len(hostLinks(t, n.NetNS)) == 0 {
			t.Fatalf("no podnet links on %s while pods run: the checks after the uninstall would prove nothing", n.Name)
		}
		tables, err := podnetTables(n.NetNS)
		if err != nil || len(tables) != 2 {
			t.Fatalf("podnet's nftables tables on %s while pods run: %v (%v), want both", n.Name, tables, err)
		}
	}
	ctx := context.Background()
	var claims podnetv1.IPClaimList
	if err := s.client.List(ctx, &claims); err != nil || len(claims.Items) == 0 {
		t.Fatalf("no IPClaims while pods run (%v)", err)
	}
	var nodes corev1.NodeList
	if err := s.client.List(ctx, &nodes); err != nil {
		t.Fatal(err)
	}
	carried := 0
	for _, n := range nodes.Items {
		if _, ok := n.Annotations[podnetv1.NodeVNIsAnnotation]; !ok {
			t.Fatalf("node %s carries no %s while a VXLAN pod runs on it", n.Name, podnetv1.NodeVNIsAnnotation)
		}
		for k := range n.Labels {
			if strings.HasPrefix(k, carry.LabelPrefix+"/") {
				carried++
			}
		}
	}
	if carried == 0 {
		t.Fatalf("no %s/ label on any node while a macvlan pod runs", carry.LabelPrefix)
	}
	// Each agent labels its Node with its runtime's NRI hold (unknown on
	// containerd 1.6 once its NRI socket stayed silent 30 s).
	for _, n := range nodes.Items {
		eventually(t, 2*time.Minute, n.Name+"'s hold label", func(ctx context.Context) error {
			var node corev1.Node
			if err := s.client.Get(ctx, client.ObjectKey{Name: n.Name}, &node); err != nil {
				return err
			}
			if _, ok := node.Labels[podnetv1.NodeHoldNRILabel]; !ok {
				return fmt.Errorf("node %s has no %s yet", n.Name, podnetv1.NodeHoldNRILabel)
			}
			return nil
		})
	}
}

// checkPodKeptWithoutPodnet: the pod is the same pod, Running and Ready,
// has no podnet link left in its netns, and eth0 still holds its address.
func (s *suite) checkPodKeptWithoutPodnet(t *testing.T, was corev1.Pod) {
	t.Helper()
	p := s.getPod(t, was.Namespace, was.Name)
	if p.UID != was.UID || p.Status.Phase != corev1.PodRunning || !ready(*p) {
		t.Errorf("pod %s: uid %s (was %s), phase %s, ready %v: want the same pod Running and Ready", p.Name, p.UID, was.UID, p.Status.Phase, ready(*p))
	}
	out, err := s.exec(p.Name, "ip", "-o", "link", "show")
	if err != nil {
		t.Errorf("pod %s: list links: %v", p.Name, err)
		return
	}
	var links []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			links = append(links, name)
		}
	}
	if slices.Sort(links); !slices.Equal(links, []string{"eth0", "lo"}) {
		t.Errorf("pod %s has links %v, want only eth0 and lo:\n%s", p.Name, links, out)
	}
	addrs, err := s.exec(p.Name, "ip", "-o", "addr", "show", "eth0")
	if err != nil || !strings.Contains(addrs, " "+p.Status.PodIP+"/") {
		t.Errorf("pod %s: eth0 lost its address %s: %v\n%s", p.Name, p.Status.PodIP, err, addrs)
	}
	if c := findPodCondition(p, podnetv1.NetworksReadyCondition); c == nil || c.Reason != podnetv1.ReasonUninstalling || c.Status != corev1.ConditionTrue {
		t.Errorf("pod %s: condition %s is %+v, want True with reason Uninstalling", p.Name, podnetv1.NetworksReadyCondition, c)
	}
}

func findPodCondition(p *corev1.Pod, typ string) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if string(p.Status.Conditions[i].Type) == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// nodeLeftovers lists what podnet left on the nodes of cluster: links
// marked as podnet's (bridges, VLAN subinterfaces, VXLAN devices, host
// veth ends), podnet's nftables tables and the agent's socket in the
// node's folder (the local cluster's /run/podnet). nil: nothing. Reading
// only.
func nodeLeftovers(c *localcluster.Cluster) error {
	var errs []error
	for _, n := range c.Nodes {
		links, err := podnetLinks(n.NetNS)
		if err == nil && len(links) > 0 {
			err = fmt.Errorf("links %v", links)
		}
		errs = append(errs, nodeErr(n.Name, err))
		tables, err := podnetTables(n.NetNS)
		if err == nil && len(tables) > 0 {
			err = fmt.Errorf("nftables tables %v", tables)
		}
		errs = append(errs, nodeErr(n.Name, err))
		run := filepath.Dir(filepath.Join(c.Dir, n.Name, localcluster.NodeCNISocket))
		if _, err := os.Stat(run); !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, nodeErr(n.Name, fmt.Errorf("the agent's folder %s (stat: %v)", run, err)))
		}
	}
	return errors.Join(errs...)
}

func nodeErr(node string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("node %s: podnet left %w", node, err)
}

// podnetLinks are the links of a node's netns whose ifalias marks them as
// podnet's, or whose name is one podnet gives (pnbr-, pnv, pnu).
func podnetLinks(netns string) ([]string, error) {
	out, err := exec.Command("ip", "-n", filepath.Base(netns), "-o", "-d", "link", "show").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("list links in %s: %v: %s", netns, err, out)
	}
	var links []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if strings.Contains(line, " alias podnet") || strings.HasPrefix(name, "pnbr-") {
			links = append(links, name)
		}
	}
	return links, nil
}

// podnetTables are podnet's nftables tables in a node's netns.
func podnetTables(netns string) ([]string, error) {
	f, err := os.Open(netns)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		return nil, fmt.Errorf("nftables in %s: %w", netns, err)
	}
	tables, err := c.ListTables()
	if err != nil {
		return nil, fmt.Errorf("nftables in %s: list tables: %w", netns, err)
	}
	var out []string
	for _, tb := range tables {
		if tb.Name == underlay.TableName || tb.Name == portsecurity.TableName {
			out = append(out, tb.Name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// apiLeftovers lists what of podnet is left in the API after an uninstall
// that kept the CRDs: the CRDs and NetworkProfiles must be there, nothing
// else (namespace podnet-system, IPClaims, Node annotations and labels, podnet's
// webhook configuration, admission policies, cluster roles and bindings).
func (s *suite) apiLeftovers(ctx context.Context) error {
	var errs []error
	left := func(what string, names []string) {
		if len(names) > 0 {
			errs = append(errs, fmt.Errorf("podnet left %s: %v", what, names))
		}
	}
	var ns corev1.Namespace
	if err := s.client.Get(ctx, client.ObjectKey{Name: "podnet-system"}, &ns); !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("namespace podnet-system still there (%v)", err))
	}
	var claims podnetv1.IPClaimList
	if err := s.client.List(ctx, &claims); err != nil {
		return err
	}
	left("IPClaims", names(claims.Items, func(c podnetv1.IPClaim) string { return c.Name }))
	var profiles podnetv1.NetworkProfileList
	if err := s.client.List(ctx, &profiles); err != nil || len(profiles.Items) == 0 {
		errs = append(errs, fmt.Errorf("the admins' NetworkProfiles are gone with the CRDs kept (%v)", err))
	}
	var nodes corev1.NodeList
	if err := s.client.List(ctx, &nodes); err != nil {
		return err
	}
	for _, n := range nodes.Items {
		for k := range n.Annotations {
			if strings.HasPrefix(k, podnetv1.AnnotationPrefix) {
				errs = append(errs, fmt.Errorf("node %s keeps annotation %s", n.Name, k))
			}
		}
		// hold.podnet.io/nri, carry.podnet.io/<need>
		for k := range n.Labels {
			if domain, _, ok := strings.Cut(k, "/"); ok && (domain == "podnet.io" || strings.HasSuffix(domain, ".podnet.io")) {
				errs = append(errs, fmt.Errorf("node %s keeps label %s", n.Name, k))
			}
		}
	}
	var mwc admissionregistrationv1.MutatingWebhookConfigurationList
	var vap admissionregistrationv1.ValidatingAdmissionPolicyList
	var vapb admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	var roles rbacv1.ClusterRoleList
	var bindings rbacv1.ClusterRoleBindingList
	for _, l := range []client.ObjectList{&mwc, &vap, &vapb, &roles, &bindings} {
		if err := s.client.List(ctx, l); err != nil {
			return err
		}
	}
	podnetName := func(name string) string {
		if strings.HasPrefix(name, "podnet") {
			return name
		}
		return ""
	}
	left("mutating webhook configurations", names(mwc.Items, func(o admissionregistrationv1.MutatingWebhookConfiguration) string { return podnetName(o.Name) }))
	left("admission policies", names(vap.Items, func(o admissionregistrationv1.ValidatingAdmissionPolicy) string { return podnetName(o.Name) }))
	left("admission policy bindings", names(vapb.Items, func(o admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return podnetName(o.Name) }))
	left("cluster roles", names(roles.Items, func(o rbacv1.ClusterRole) string { return podnetName(o.Name) }))
	left("cluster role bindings", names(bindings.Items, func(o rbacv1.ClusterRoleBinding) string { return podnetName(o.Name) }))
	flows := &unstructured.UnstructuredList{}
	flows.SetGroupVersionKind(schema.GroupVersionKind{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "FlowSchemaList"})
	if err := s.client.List(ctx, flows); err != nil {
		return err
	}
	left("flow schemas", names(flows.Items, func(o unstructured.Unstructured) string { return podnetName(o.GetName()) }))
	return errors.Join(errs...)
}

// names maps items to names, dropping empty ones.
func names[T any](items []T, name func(T) string) []string {
	var out []string
	for _, it := range items {
		if n := name(it); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
