package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/hack/release"
	"podnet.io/podnet/pkg/version"
	"podnet.io/podnet/test/testenv"
)

// The lifecycle chain: one two-node cluster on which the previous release
// is upgraded with pods running (TestRootUpgrade), then the upgraded
// install is removed with pods running (TestRootUninstall), in that order
// (go test runs a file's tests in the order they are written). Run alone,
// each brings up the cluster itself. TestRootHelm installs on a cluster of
// its own: on one that had podnet's CRDs deleted and created again, the
// API server's admission policies did not find their params at once.
var lifeShape = localcluster.Options{Name: lifeCluster, Nodes: 2}

// lifeCluster is named clusterName, so that the suites' node1 and node2
// are its nodes.
var lifeCluster = clusterName

// TestRootUpgrade installs the previous release (built from the commit
// CHANGELOG.md names, with that tree's own Makefile, image builder and
// deploy/), runs pods on every network kind, upgrades to the working tree
// with the pods running, and checks that nothing of theirs changed, that
// no approval was refused, that no address is held twice or unclaimed, and
// that new pods of every kind reach the old ones.
func TestRootUpgrade(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the upgrade suite runs a local cluster (network namespaces, kubelet): run it as root")
	}
	start := time.Now()
	root := testenv.RepoRoot(t)
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	prev, err := release.Previous(string(changelog))
	if err != nil {
		t.Fatal(err)
	}
	s := setUpUpgrade(t, root, prev)
	fixtures[lifeCluster].in = s.in // TestRootUninstall takes this install over
	kinds := upgradeKinds(t)

	s.apply(t, upgradeProfile(kinds))
	s.kubectl(t, "", "create", "namespace", tenantNS)
	s.kubectl(t, "", "label", "namespace", tenantNS, podnetv1.EnabledLabel+"=true", "tenant=a")
	old := s.startUpgradePods(t, kinds, "old")
	before := map[string]podState{}
	for _, p := range old {
		before[p.Name] = s.recordPod(t, p)
	}
	t.Logf("release %s runs %d pods on %d network kinds", prev.Version, len(old), len(kinds))

	upgradeStart := time.Now()
	s.upgrade(t)
	t.Logf("upgraded %s -> %s in %s (deploy and rollouts)", prev.Version, version.Version, time.Since(upgradeStart).Round(time.Second))

	fresh := s.startUpgradePods(t, kinds, "new")
	// The new agents look at every pod of their node when they start and
	// again every resync (30 s): wait out one resync, so that the checks
	// below judge what the new agents decided about the old pods.
	time.Sleep(time.Until(upgradeStart.Add(45 * time.Second)))
	for _, p := range old {
		s.checkPodKept(t, before[p.Name], p)
	}
	s.checkNoRefusal(t)
	all := append(append([]corev1.Pod{}, old...), fresh...)
	s.checkAddressesClaimedOnce(t, all)
	s.checkNewPodsReachOld(t, kinds, old, fresh)
	t.Logf("TestRootUpgrade took %s", time.Since(start).Round(time.Second))
}

// TestRootUninstall: with podnet pods running on every kind the kernel
// has, `make undeploy` (the uninstall step, then kubectl delete of the
// objects) leaves the pods running, Ready and on their primary network
// but without their podnet interfaces; nothing of podnet on the nodes
// (links, nftables tables, the agent's socket) and nothing in the API but
// the CRDs and the admins' NetworkProfiles (no IPClaim, no Node
// annotation, no podnet-system, no cluster-scoped object of podnet's).
func TestRootUninstall(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the uninstall suite runs a local cluster (network namespaces, kubelet): run it as root")
	}
	s := fixtureFor(t, lifeShape, last).installed(t)
	s.testAdmin(t)
	s.apply(t, spanProfile)
	n1, n2 := node1, node2
	apps := map[string]string{"un-br": "data", "un-up": "span-up", "un-mv": "span-mv"}
	s.apply(t, deployment("un-br", n1, "data", 1))
	s.apply(t, deployment("un-up", n2, "span-up", 1))
	s.apply(t, deployment("un-mv", n1, "span-mv", 1))
	// VXLAN: one pod on each node, so both nodes carry the overlay.
	s.apply(t, deployment("un-vx-1", n1, "span-vx", 1))
	s.apply(t, deployment("un-vx-2", n2, "span-vx", 1))
	apps["un-vx-1"], apps["un-vx-2"] = "span-vx", "span-vx"
	s.applyUninstallKinds(t, apps, n2)

	var pods []corev1.Pod
	for _, app := range slices.Sorted(mapKeys(apps)) {
		pods = append(pods, s.waitPodsWith(t, app, 1, "net1")...)
	}
	s.checkSomethingToClean(t)

	start := time.Now()
	if err := s.in.Undeploy(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	t.Logf("make undeploy took %s", time.Since(start).Round(time.Second))

	for _, p := range pods {
		s.checkPodKeptWithoutPodnet(t, p)
	}
	if err := nodeLeftovers(s.cluster); err != nil {
		t.Error(err)
	}
	if err := s.apiLeftovers(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestRootHelm moves a make deploy install to Helm as docs/install.md
// says, on a fresh local cluster (images and cert-manager as the other
// suites): make deploy, a profile and podnet pods; make undeploy (the CRDs
// stay, the pods lose their networks), then `helm install
// --take-ownership` of deploy/helm/podnet with the values file the cluster
// wrote and make deploy's key pair: the profile is still there and the
// running pods get their networks again. Then it upgrades the release
// with pods running (new agent flags and resources: the agents restart)
// and uninstalls it.
func TestRootHelm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the e2e suite runs a local cluster (network namespaces, kubelet): run it as root")
	}
	start := time.Now()
	in := startCluster(t, localcluster.Options{Name: clusterName, Nodes: 1})
	ctx := context.Background()
	tarballs, err := in.BuildImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.ImportImages(ctx, tarballs); err != nil {
		t.Fatal(err)
	}
	if err := in.CertManager(ctx); err != nil {
		t.Fatal(err)
	}
	if err := in.Deploy(ctx); err != nil {
		t.Fatal(err)
	}
	s := newSuite(t, in)
	s.testAdmin(t)
	s.testTenantPods(t)
	profiles := s.kubectl(t, "", "get", "networkprofiles", "-o", "name")
	pods := map[string]bool{}
	for _, p := range s.waitPodsWith(t, "web", 2, "net1") {
		pods[p.Name] = true
	}
	helm := *in
	helm.WithHelm = true
	if err := helm.Reinstall(ctx, in); err != nil {
		t.Fatalf("from make deploy to helm: %v", err)
	}
	t.Logf("cluster up, podnet deployed and moved to helm in %s", time.Since(start).Round(time.Second))
	s.in = &helm
	t.Run("MoveKeepsProfilesAndPods", func(t *testing.T) {
		if got := s.kubectl(t, "", "get", "networkprofiles", "-o", "name"); strings.TrimSpace(profiles) == "" || got != profiles {
			t.Fatalf("profiles before the move to helm %q, after %q", profiles, got)
		}
		for _, p := range s.waitPodsWith(t, "web", 2, "net1") {
			if !pods[p.Name] {
				t.Errorf("pod %s is new: the move replaced a running pod", p.Name)
			}
			if out, err := s.exec(p.Name, "ip", "addr", "show", "net1"); err != nil {
				t.Errorf("pod %s has no net1 after the move: %v\n%s", p.Name, err, out)
			}
		}
	})
	t.Run("UpgradeKeepsPods", s.testHelmUpgrade)
	t.Run("UninstallRemovesTheRelease", s.testHelmUninstall)
}
