package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"podnet.io/podnet/hack/install"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/test/testenv"
)

// A fixture is a local cluster that suites of this test binary share: a
// suite asks for a cluster by its shape (localcluster.Options: name,
// nodes, runtime, NRI validator, attach at sandbox setup) and gets the
// running one if an earlier suite brought it up with that shape and
// passed; otherwise, and after a suite that used it failed, a fresh one.
// Bringing up a cluster costs 25–35 s and installing podnet 45–60 s on two
// cores: make test brings up one per chain of suites. TestMain
// brings every fixture down when the suites end (unless PODNET_E2E_KEEP),
// but the one handOverEnv names, if its chain passed: make test hands the
// NRI suites' cluster to the NRI burst's smoke (test/burst), which would
// otherwise bring up one of its own, and brings it down after.
type fixture struct {
	cluster *localcluster.Cluster
	opts    localcluster.Options
	// in is the installer podnet was last installed with, nil while
	// podnet is not installed (or its state is not known).
	in *install.Installer
}

// fixtures are this binary's running clusters, by name.
var fixtures = map[string]*fixture{}

// handOverEnv names a fixture left running when its last suite passed,
// for another test binary to take over (localcluster.Up reuses a healthy
// cluster of the same shape); whoever set it brings it down.
const handOverEnv = "PODNET_E2E_HAND_OVER"

// handedOver says whether the fixture named name stays up for another
// binary once its chain passed.
func handedOver(name string) bool { return os.Getenv(handOverEnv) == name }

// TestMain brings down the fixtures the suites left running (a chain
// run in part by -run).
func TestMain(m *testing.M) {
	code := m.Run()
	if os.Getenv("PODNET_E2E_KEEP") == "" {
		for name, f := range fixtures {
			if handedOver(name) && code == 0 {
				fmt.Fprintf(os.Stderr, "e2e fixture %q left running for the next binary (%s)\n", name, handOverEnv)
				continue
			}
			if err := f.cluster.Down(context.Background()); err != nil {
				fmt.Fprintf(os.Stderr, "bring down the e2e fixture %q: %v\n", name, err)
				code = 1
			}
		}
	}
	os.Exit(code)
}

// A place is where a suite stands in the chain of suites that share a
// fixture: whether it takes over the running cluster and whether it
// leaves the cluster for the next suite.
type place int

const (
	alone  place = iota // a fresh cluster, brought down when the suite ends
	first               // a fresh cluster, left running for the next suite
	middle              // the running cluster if clean, left running
	last                // the running cluster if clean, brought down when the suite ends
)

// fixtureFor returns the fixture of o's shape for t at place p: the
// running one where p takes it over and it is clean, else a fresh
// cluster. If t fails, the fixture is brought down when t ends, so the
// next suite starts on a fresh one.
func fixtureFor(t *testing.T, o localcluster.Options, p place) *fixture {
	t.Helper()
	if o.Runtime == "" {
		o.Runtime = nodeRuntime
	}
	f := fixtures[o.Name]
	if f != nil && (p == alone || p == first || !sameShape(f.opts, o)) {
		t.Logf("fixture %q: bringing it down for a fresh one", o.Name)
		f.down(t)
		f = nil
	}
	if f == nil {
		f = &fixture{cluster: upCluster(t, testenv.RepoRoot(t), o), opts: o}
		fixtures[o.Name] = f
	} else {
		t.Logf("fixture %q: taking over the running cluster", o.Name)
	}
	t.Cleanup(func() {
		if os.Getenv("PODNET_E2E_KEEP") != "" {
			t.Logf("PODNET_E2E_KEEP set: cluster %q kept; KUBECONFIG=%s", f.cluster.Name, f.cluster.Kubeconfig)
			return
		}
		if t.Failed() || p == alone || (p == last && !handedOver(o.Name)) {
			f.down(t)
		}
	})
	testenv.TearDownBeforeTimeout(t, func() { _ = f.cluster.Down(context.Background()) })
	return f
}

// down brings f's cluster down and forgets it.
func (f *fixture) down(t *testing.T) {
	if fixtures[f.cluster.Name] == f {
		delete(fixtures, f.cluster.Name)
	}
	if err := f.cluster.Down(context.Background()); err != nil {
		t.Errorf("bring down cluster %q: %v", f.cluster.Name, err)
	}
}

// sameShape compares what makes two clusters different (the options a
// cluster is brought up with, less its log and root).
func sameShape(a, b localcluster.Options) bool {
	a.Log, b.Log, a.Root, b.Root = nil, nil, "", ""
	return a == b
}

// deployed returns a suite on f with podnet installed as make deploy does
// with env added (hack/deploy.sh's variables, e.g. how pods are held), or
// with Helm where installWithHelm and the cluster's values file says what
// env does (install.HelmCovers): on
// a fresh fixture the whole install (images, cert-manager, podnet); on a
// reused one, the tenants' namespaces and the profiles removed, and podnet
// deployed again only if it was installed otherwise.
func (f *fixture) deployed(t *testing.T, env ...string) *suite {
	t.Helper()
	start := time.Now()
	ctx := context.Background()
	in := &install.Installer{Root: testenv.RepoRoot(t), Cluster: f.cluster, Log: testLog{t}, DeployEnv: env,
		WithHelm: installWithHelm && install.HelmCovers(env)}
	switch {
	case f.in == nil:
		if err := in.All(ctx); err != nil {
			t.Fatalf("install: %v", err)
		}
	default:
		f.clean(t)
		if !sameInstall(f.in, in) {
			t.Logf("fixture %q: deploying podnet again, with %v (Helm: %v)", f.cluster.Name, env, in.WithHelm)
			if err := in.Reinstall(ctx, f.in); err != nil {
				t.Fatalf("deploy: %v", err)
			}
		}
	}
	f.in = in
	t.Logf("cluster %q ready with podnet installed in %s", f.cluster.Name, time.Since(start).Round(time.Second))
	checkNodeRuntime(t, f.cluster)
	return newSuite(t, in)
}

// installed returns a suite on f with podnet installed as an earlier suite
// left it (the tenants' namespaces and the profiles removed), or installed
// by make deploy if f is fresh.
func (f *fixture) installed(t *testing.T) *suite {
	t.Helper()
	if f.in == nil {
		return f.deployed(t)
	}
	f.clean(t)
	return newSuite(t, f.in)
}

// sameInstall says whether b would deploy what a did.
func sameInstall(a, b *install.Installer) bool {
	return a.Root == b.Root && a.Tag == b.Tag && a.KeysDir == b.KeysDir && slices.Equal(a.DeployEnv, b.DeployEnv) && a.WithHelm == b.WithHelm
}

// clean removes what an earlier suite left for tenants (the tenants'
// namespaces and the profiles: install.RemoveTenants).
func (f *fixture) clean(t *testing.T) {
	t.Helper()
	in := &install.Installer{Root: testenv.RepoRoot(t), Cluster: f.cluster, Log: testLog{t}}
	if err := in.RemoveTenants(context.Background()); err != nil {
		t.Fatal(err)
	}
}
