//go:build bench

package burst

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"podnet.io/podnet/test/testenv"
)

// The modules the Multus arms come from: the same versions as the
// differential test's (test/multusdiff/go.mod), read from there.
const (
	multusModule = "gopkg.in/k8snetworkplumbingwg/multus-cni.v4"
	nadModule    = "github.com/k8snetworkplumbingwg/network-attachment-definition-client"
)

// nads are the Multus arms' networks, one bridge each, as podnet's b1 and
// b2 are.
var nads = []nad{{Name: "m1", Bridge: "mbr1", Subnet: "10.211.0.0/16"}, {Name: "m2", Bridge: "mbr2", Subnet: "10.212.0.0/16"}}

// setUpMultus builds the Multus thin plugin into the cluster's CNI bin
// folder, installs the NetworkAttachmentDefinition CRD and the arms'
// attachments, and prepares each node's Multus configuration, delegating
// to the node's own network; useMultus writes it for the Multus arms.
func (cl *cluster) setUpMultus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	diff := filepath.Join(testenv.RepoRoot(t), "test", "multusdiff")
	multus, nadClient := goModule(t, ctx, diff, multusModule), goModule(t, ctx, diff, nadModule)
	fmt.Printf("burst: Multus %s (thin plugin) and the NetworkAttachmentDefinition CRD of %s %s, as test/multusdiff pins them\n", multus.Version, nadModule, nadClient.Version)
	bin := filepath.Join(cl.c.CNIBinDir(), "multus")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, multusModule+"/cmd/multus")
	build.Dir, build.Env = diff, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build Multus %s into %s: %v: %s", multus.Version, bin, err, out)
	}
	cl.kubectl(t, "", "apply", "-f", filepath.Join(nadClient.Dir, "artifacts", "networks-crd.yaml"))
	cl.kubectl(t, "", "wait", "--for=condition=Established", "--timeout=60s", "crd/network-attachment-definitions.k8s.cni.cncf.io")
	cl.kubectl(t, "", "create", "namespace", multusNS)
	cl.multus = map[string][]byte{}
	version := ""
	for _, n := range cl.c.Nodes {
		dir := filepath.Dir(n.CRISocket)
		delegate := nodeNetwork(t, n.CNIConfDir)
		conf, err := multusConf(delegate, multusPaths{
			Kubeconfig: cl.c.InternalKubeconfig(), BinDir: cl.c.CNIBinDir(),
			CNIDir: filepath.Join(dir, "multus"), ConfDir: filepath.Join(dir, "multus.d"), LogFile: filepath.Join(dir, "multus.log"),
		})
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		cl.multus[n.CNIConfDir] = conf
		var v struct{ CNIVersion string }
		if err := json.Unmarshal(delegate, &v); err != nil {
			t.Fatalf("node %s: CNI version: %v", n.Name, err)
		}
		version = v.CNIVersion
	}
	for _, a := range nads {
		m, err := nadManifest(a, multusNS, version, filepath.Join(cl.c.Dir, "multus-ipam"))
		if err != nil {
			t.Fatal(err)
		}
		cl.kubectl(t, m, "apply", "-f", "-")
	}
}

// module is what `go mod download -json` says of one module.
type module struct{ Version, Dir string }

// goModule downloads path at the version the module in dir requires.
func goModule(t *testing.T, ctx context.Context, dir, path string) module {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s in %s: %v: %s", path, dir, err, out)
	}
	var m module
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s in %s: %q: %v", path, dir, out, err)
	}
	return m
}

// nodeNetwork is the CNI configuration containerd uses on a node without
// Multus: the first file of its folder by name.
func nodeNetwork(t *testing.T, confDir string) []byte {
	ents, err := os.ReadDir(confDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents { // sorted by name
		if e.Name() == multusConfName || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(confDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("no CNI configuration in %s", confDir)
	return nil
}

// useMultus makes Multus every node's primary CNI plugin (on) or takes it
// away again, and waits until each node's containerd has loaded the
// change, so no pod of the next arm starts with the other configuration.
// Between arms no sandbox exists (remove), so none is torn down by a
// plugin that did not set it up.
func (cl *cluster) useMultus(t *testing.T, on bool) {
	if cl.multusOn == on {
		return
	}
	for dir, conf := range cl.multus {
		f := filepath.Join(dir, multusConfName)
		var err error
		if on {
			err = os.WriteFile(f, conf, 0o644)
		} else {
			err = os.Remove(f)
		}
		if err != nil {
			t.Fatalf("multus %v on the node of %s: %v", on, dir, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		nets, err := cl.cniNetworks(ctx)
		if err == nil && slices.Contains(nets, multusNetworkName) == on {
			cl.multusOn = on
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("containerd did not load the CNI configuration with Multus %v within 1 min: networks %v, %v", on, nets, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// cniNetworks are the CNI networks the node's containerd has loaded.
func (cl *cluster) cniNetworks(ctx context.Context) ([]string, error) {
	st, err := cl.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		return nil, fmt.Errorf("containerd status: %w", err)
	}
	return cniNetworks(st.Info["cniconfig"])
}

// firstCommands reads the line the app's first command printed in every
// pod of the Deployment: how many started without one of their
// interfaces, and how many logs lack the line. An app the kubelet
// started again (the agent stops one that started before its networks)
// is judged by its previous instance's log: the first, unless it was
// started again more than once.
func (cl *cluster) firstCommands(t *testing.T, ctx context.Context, namespace, name string) (without, unreported int) {
	pods, err := cl.cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: appLabel + "=" + name})
	if err != nil {
		t.Fatalf("list the pods of deployment %s/%s: %v", namespace, name, err)
	}
	for _, p := range pods.Items {
		previous := false
		for _, c := range p.Status.ContainerStatuses {
			previous = previous || (c.Name == "app" && c.RestartCount > 0)
		}
		log, err := cl.cs.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "app", Previous: previous}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of pod %s/%s (previous instance %v): %v", namespace, p.Name, previous, err)
		}
		missing, ok := parseFirstCommand(string(bytes.TrimSpace(log)))
		switch {
		case !ok:
			unreported++
			fmt.Printf("burst: pod %s/%s: no %s line in its app's log %q\n", namespace, p.Name, firstMarker, log)
		case len(missing) > 0:
			without++
			fmt.Printf("burst: pod %s/%s: its app started without %s\n", namespace, p.Name, strings.Join(missing, ", "))
		}
	}
	return without, unreported
}
