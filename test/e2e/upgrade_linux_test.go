package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"podnet.io/podnet/api/v1alpha1"
	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/image"
	"podnet.io/podnet/hack/install"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/hack/release"
	"podnet.io/podnet/pkg/version"
	"podnet.io/podnet/test/netnstest"
)

// upgradeKind is one network kind the upgrade suite runs pods on: a
// network of the profile and whether it reaches across the two nodes (a
// new pod then pings the old pods of both nodes, else only its own node's).
type upgradeKind struct {
	network string
	spans   bool
	// entry is the network's item in the profile's networks list.
	entry string
}

// upgradeKinds are the kinds the host kernel has. Bridge, macvlan and the
// VXLAN overlay need only what every podnet node has; VLAN needs 8021q,
// probed in a throwaway netns. ipvlan is not among them: the local
// cluster has one data NIC, which the macvlan network holds, and a link
// cannot be the parent of macvlan and ipvlan links at once.
func upgradeKinds(t *testing.T) []upgradeKind {
	kinds := []upgradeKind{
		{"up-br", false, `
  - name: up-br
    allowRawSockets: true
    bridge: {name: pnbr-upbr}
    ipam: {pools: ["192.168.70.0/24", "fd00:70::/64"]}`},
		{"up-mv", true, fmt.Sprintf(`
  - name: up-mv
    allowRawSockets: true
    macvlan: {master: %s, mode: bridge}
    ipam: {pools: ["192.168.71.0/24", "fd00:71::/64"]}`, localcluster.DataNIC)},
		{"up-vx", true, `
  - name: up-vx
    allowRawSockets: true
    bridge: {name: pnbr-upvx, vxlan: {vni: 4343}}
    ipam: {pools: ["192.168.72.0/24", "fd00:72::/64"]}`},
	}
	if kernelHasLink(t, "vlan", "id", "170") {
		kinds = append(kinds, upgradeKind{"up-vl", true, fmt.Sprintf(`
  - name: up-vl
    allowRawSockets: true
    vlan: {master: %s, vlan: {default: 170}}
    ipam: {pools: ["192.168.73.0/24", "fd00:73::/64"]}`, localcluster.DataNIC)})
	} else {
		t.Logf("the host kernel cannot create VLAN links (no 8021q): the upgrade runs no VLAN network")
	}
	return kinds
}

// kernelHasLink creates a link of kind on a veth in a throwaway netns.
func kernelHasLink(t *testing.T, kind string, args ...string) bool {
	ns, _ := netnstest.NewNetNS(t, "pnup", "probe")
	netnstest.Run(t, "ip", "-n", ns, "link", "add", "pv0", "type", "veth", "peer", "name", "pv1")
	cmd := append([]string{"-n", ns, "link", "add", "link", "pv0", "name", "pv0.k", "type", kind}, args...)
	return exec.Command("ip", cmd...).Run() == nil
}

func upgradeProfile(kinds []upgradeKind) string {
	var b strings.Builder
	b.WriteString(`
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata: {name: e2e-upgrade}
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:`)
	for _, k := range kinds {
		b.WriteString(k.entry)
	}
	return b.String() + "\n"
}

// setUpUpgrade brings up a fresh two-node cluster (the first of the
// lifecycle chain), builds the working tree's images (tagged with its
// release) and cert-manager, builds the previous release from its commit
// with its own tooling, and installs it. The suite's installer deploys the
// working tree.
func setUpUpgrade(t *testing.T, root string, prev release.Release) *suite {
	ctx := context.Background()
	c := fixtureFor(t, lifeShape, first).cluster
	// One key pair for both releases, as `make deploy` keeps _output/keys;
	// it lives as long as the cluster, which the chain's next suite takes
	// over.
	keys := filepath.Join(c.Dir, "approval-keys")
	in := &install.Installer{Root: root, Cluster: c, Log: testLog{t}, Tag: version.Version, KeysDir: keys}
	tarballs, err := in.BuildImages(ctx)
	if err != nil {
		t.Fatalf("build the working tree's images: %v", err)
	}
	oldRoot := buildRelease(t, root, prev)
	for _, short := range []string{image.WebhookName, image.AgentName, image.WaitName, image.ControllerName} {
		tarballs = append(tarballs, filepath.Join(oldRoot, image.ImagesDir, image.TarballName(short)))
	}
	for _, tb := range tarballs {
		if err := c.ImportImage(ctx, tb); err != nil {
			t.Fatalf("import %s: %v", tb, err)
		}
	}
	if err := in.CertManager(ctx); err != nil {
		t.Fatalf("install cert-manager: %v", err)
	}
	oldIn := &install.Installer{Root: oldRoot, Cluster: c, Log: testLog{t}, KeysDir: keys}
	if err := oldIn.Deploy(ctx); err != nil {
		t.Fatalf("deploy release %s: %v", prev.Version, err)
	}
	return &suite{in: in, cluster: c, client: newClient(t, c)}
}

// buildRelease builds release r with its own tooling (release.Build:
// once per commit, kept under _output/release; make test builds it beside
// the suites) and returns its folder.
func buildRelease(t *testing.T, root string, r release.Release) string {
	dir, err := release.Build(context.Background(), root, r, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// upgrade deploys the working tree over the previous release, as `make
// deploy` would, and checks that every agent, webhook and controller pod
// now runs the new images and the agents report the new release.
func (s *suite) upgrade(t *testing.T) {
	ctx := context.Background()
	if err := s.in.Deploy(ctx); err != nil {
		t.Fatalf("upgrade to %s: %v", version.Version, err)
	}
	want := map[string]string{
		"podnet-agent":      image.Ref(image.AgentName, version.Version),
		"podnet-webhook":    image.Ref(image.WebhookName, version.Version),
		"podnet-controller": image.Ref(image.ControllerName, version.Version),
	}
	eventually(t, 3*time.Minute, "only pods of the new release in podnet-system", func(ctx context.Context) error {
		var list corev1.PodList
		if err := s.client.List(ctx, &list, client.InNamespace("podnet-system")); err != nil {
			return err
		}
		for _, p := range list.Items {
			img, ok := want[p.Labels["app.kubernetes.io/name"]]
			if !ok {
				continue
			}
			if p.Spec.Containers[0].Image != img || !ready(p) || p.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s runs %s (ready %v), want %s", p.Name, p.Spec.Containers[0].Image, ready(p), img)
			}
		}
		return nil
	})
	// The release before had the pod policies that podnet-pods replaced;
	// the upgrade deletes them, so that a pod status write is not
	// evaluated by both.
	policies := strings.Fields(s.kubectl(t, "", "get", "validatingadmissionpolicies", "-o", "name"))
	for _, retired := range []string{"podnet-agent-node", "podnet-annotations-subresources"} {
		if slices.Contains(policies, "validatingadmissionpolicy.admissionregistration.k8s.io/"+retired) {
			t.Errorf("after the upgrade the policy %s of the release before is still installed", retired)
		}
	}
	if !slices.Contains(policies, "validatingadmissionpolicy.admissionregistration.k8s.io/podnet-pods") {
		t.Errorf("after the upgrade no policy podnet-pods: %v", policies)
	}
	out := s.kubectl(t, "", "-n", "podnet-system", "exec", "daemonset/podnet-agent", "--", image.AgentBinary, "--version")
	if !strings.HasPrefix(strings.TrimSpace(out), "podnet-agent "+version.Version) {
		t.Fatalf("the upgraded agent reports %q, want release %s", out, version.Version)
	}
}

// startUpgradePods runs one pod per kind on each node, each asking for
// its kind's network, and returns them once Ready with net1.
func (s *suite) startUpgradePods(t *testing.T, kinds []upgradeKind, prefix string) []corev1.Pod {
	for _, k := range kinds {
		for i, node := range []string{node1, node2} {
			s.apply(t, deployment(fmt.Sprintf("%s-%s-%d", prefix, k.network, i+1), node, k.network, 1))
		}
	}
	var pods []corev1.Pod
	for _, k := range kinds {
		for i := range 2 {
			pods = append(pods, s.waitPodsWith(t, fmt.Sprintf("%s-%s-%d", prefix, k.network, i+1), 1, "net1")[0])
		}
	}
	return pods
}

// podState is what must survive an upgrade of a running pod.
type podState struct {
	Name     string
	UID      types.UID
	Restarts int32
	// Status is the network-status annotation, decoded.
	Status []podnetv1.NetworkStatus
	// Links are the pod's interfaces other than lo as seen inside its
	// netns: name, MAC and global addresses.
	Links map[string]podLink
}

type podLink struct {
	MAC   string
	Addrs []string
}

func (s *suite) recordPod(t *testing.T, p corev1.Pod) podState {
	t.Helper()
	st := podState{Name: p.Name, UID: p.UID}
	for _, c := range p.Status.ContainerStatuses {
		st.Restarts += c.RestartCount
	}
	raw := p.Annotations[podnetv1.NetworkStatusAnnotation]
	if err := json.Unmarshal([]byte(raw), &st.Status); err != nil {
		t.Fatalf("pod %s: network-status %q: %v", p.Name, raw, err)
	}
	st.Links = s.podLinks(t, p.Name)
	return st
}

// podLinks reads `ip -o link` and `ip -o addr` inside the pod.
func (s *suite) podLinks(t *testing.T, pod string) map[string]podLink {
	t.Helper()
	links, err := s.exec(pod, "ip", "-o", "link", "show")
	if err != nil {
		t.Fatalf("links of pod %s: %v", pod, err)
	}
	addrs, err := s.exec(pod, "ip", "-o", "addr", "show", "scope", "global")
	if err != nil {
		t.Fatalf("addresses of pod %s: %v", pod, err)
	}
	return parsePodLinks(links, addrs)
}

// parsePodLinks reads busybox's one-line forms: "3: net1@if9: <...> mtu
// 1500 qdisc noqueue \    link/ether 02:.. brd ff:.." and "3: net1
// inet 192.168.70.2/24 scope global net1".
func parsePodLinks(links, addrs string) map[string]podLink {
	out := map[string]podLink{}
	for _, line := range strings.Split(links, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if name == "lo" {
			continue
		}
		l := podLink{}
		if i := slices.Index(f, "link/ether"); i >= 0 && i+1 < len(f) {
			l.MAC = f[i+1]
		}
		out[name] = l
	}
	for _, line := range strings.Split(addrs, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || (f[2] != "inet" && f[2] != "inet6") {
			continue
		}
		if l, ok := out[f[1]]; ok {
			l.Addrs = append(l.Addrs, f[3])
			slices.Sort(l.Addrs)
			out[f[1]] = l
		}
	}
	return out
}

// checkPodKept: the pod is the same (UID, no restart), still Ready with
// its networks, and shows the same interfaces, MACs and addresses, inside
// and in its network-status.
func (s *suite) checkPodKept(t *testing.T, was podState, p corev1.Pod) {
	t.Helper()
	var now corev1.Pod
	if err := s.client.Get(context.Background(), client.ObjectKeyFromObject(&p), &now); err != nil {
		t.Errorf("pod %s after the upgrade: %v", p.Name, err)
		return
	}
	if now.UID != was.UID || now.DeletionTimestamp != nil || !ready(now) {
		t.Errorf("pod %s after the upgrade: uid %s (was %s), deleting %v, ready %v", p.Name, now.UID, was.UID, now.DeletionTimestamp != nil, ready(now))
	}
	if c := networksReady(&now); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("pod %s after the upgrade: condition %s = %+v, want True", p.Name, podnetv1.NetworksReadyCondition, c)
	}
	got := s.recordPod(t, now)
	if got.Restarts != was.Restarts {
		t.Errorf("pod %s: containers restarted %d times during the upgrade", p.Name, got.Restarts-was.Restarts)
	}
	if !reflect.DeepEqual(got.Status, was.Status) {
		t.Errorf("pod %s: network-status changed across the upgrade:\nbefore %+v\nafter  %+v", p.Name, was.Status, got.Status)
	}
	if !reflect.DeepEqual(got.Links, was.Links) {
		t.Errorf("pod %s: interfaces inside the pod changed across the upgrade:\nbefore %+v\nafter  %+v", p.Name, was.Links, got.Links)
	}
	if len(was.Links["net1"].Addrs) == 0 || was.Links["net1"].MAC == "" {
		t.Errorf("pod %s: net1 recorded without MAC or address (%+v): the comparison proves nothing", p.Name, was.Links["net1"])
	}
}

// checkNoRefusal: no agent Event on a tenant pod says an approval was
// refused, a grant revoked or narrowed, an attach failed or networks were
// detached — across both releases.
func (s *suite) checkNoRefusal(t *testing.T) {
	t.Helper()
	var list corev1.EventList
	if err := s.client.List(context.Background(), &list, client.InNamespace(tenantNS)); err != nil {
		t.Fatal(err)
	}
	bad := []string{podnetv1.ReasonInvalidApproval, podnetv1.ReasonGrantRevoked, podnetv1.ReasonGrantNarrowed,
		podnetv1.ReasonAttachFailed, podnetv1.ReasonIPAMFailed, podnetv1.ReasonDetached, podnetv1.ReasonPrivilegedPod}
	for _, e := range list.Items {
		fromAgent := e.ReportingController == v1alpha1.AgentName || e.Source.Component == v1alpha1.AgentName
		if e.InvolvedObject.Kind == "Pod" && (slices.Contains(bad, e.Reason) || (fromAgent && e.Type == corev1.EventTypeWarning)) {
			t.Errorf("pod %s: event %s %s from %s%s: %s", e.InvolvedObject.Name, e.Type, e.Reason, e.ReportingController, e.Source.Component, e.Message)
		}
	}
}

// checkAddressesClaimedOnce: no address is held by two pods, and each
// podnet address of each pod is an IPClaim naming that pod and interface.
func (s *suite) checkAddressesClaimedOnce(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	var claims podnetv1.IPClaimList
	if err := s.client.List(context.Background(), &claims); err != nil {
		t.Fatal(err)
	}
	type holder struct{ uid, iface string }
	claimed := map[string][]holder{}
	for _, c := range claims.Items {
		if c.Spec.Address != "" {
			claimed[c.Spec.Address] = append(claimed[c.Spec.Address], holder{c.Spec.Pod.UID, c.Spec.Interface})
		}
	}
	held := map[string]string{}
	for _, p := range pods {
		var now corev1.Pod
		if err := s.client.Get(context.Background(), client.ObjectKeyFromObject(&p), &now); err != nil {
			t.Fatal(err)
		}
		st := s.recordPod(t, now)
		for _, e := range st.Status {
			if e.Default {
				continue
			}
			for _, ip := range e.IPs {
				// network-status lists bare addresses, as Multus does;
				// a prefix length is cut off should one appear.
				bare, _, _ := strings.Cut(ip, "/")
				a, err := netip.ParseAddr(bare)
				if err != nil {
					t.Fatalf("pod %s: address %q in network-status: %v", p.Name, ip, err)
				}
				addr := a.String()
				if other, dup := held[addr]; dup {
					t.Errorf("address %s held by pods %s and %s", addr, other, p.Name)
				}
				held[addr] = p.Name
				if !slices.Contains(claimed[addr], holder{string(now.UID), e.Interface}) {
					t.Errorf("pod %s: %s on %s has no IPClaim naming it (claims of that address: %+v)", p.Name, addr, e.Interface, claimed[addr])
				}
			}
		}
	}
	if len(held) == 0 {
		t.Fatal("no podnet address among the pods: the check proves nothing")
	}
}

// checkNewPodsReachOld: each new pod on node 1 pings every address of the
// old pods on its network that share its layer 2 (node 1's, and node 2's
// when the kind spans nodes).
func (s *suite) checkNewPodsReachOld(t *testing.T, kinds []upgradeKind, old, fresh []corev1.Pod) {
	t.Helper()
	byApp := func(pods []corev1.Pod, app string) corev1.Pod {
		for _, p := range pods {
			if p.Labels["app"] == app {
				return p
			}
		}
		t.Fatalf("no pod of %s", app)
		return corev1.Pod{}
	}
	for _, k := range kinds {
		from := byApp(fresh, "new-"+k.network+"-1")
		targets := []corev1.Pod{byApp(old, "old-"+k.network+"-1")}
		if k.spans {
			targets = append(targets, byApp(old, "old-"+k.network+"-2"))
		}
		for _, to := range targets {
			st, err := statusOf(to)
			if err != nil {
				t.Fatal(err)
			}
			for _, ip := range ipsOf(st, "net1") {
				addr, _, _ := strings.Cut(ip, "/")
				eventually(t, time.Minute, fmt.Sprintf("new pod %s pings old pod %s at %s over %s", from.Name, to.Name, addr, k.network), func(ctx context.Context) error {
					out, err := s.exec(from.Name, "ping", "-c", "1", "-W", "2", addr)
					if err != nil {
						return fmt.Errorf("%w: %s", err, out)
					}
					return nil
				})
			}
		}
	}
}
