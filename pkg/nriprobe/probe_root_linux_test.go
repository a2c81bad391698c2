package nriprobe_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	agentnri "podnet.io/podnet/agent/nri"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/hack/localcluster"
	"podnet.io/podnet/pkg/nriprobe"
	"podnet.io/podnet/test/critest"
	"podnet.io/podnet/test/testenv"
)

// TestRootProbeNRIRuntimes runs the probe against a real containerd 2
// and a real CRI-O (the runtimes with NRI) with NRI's default validator
// on, and against each with it off, each with
// podnet's NRI plugin connected as the agent connects it: on, the
// validator refuses the probe's container and the probe says enforced;
// off, the container is created and the probe says unenforced. Either
// way podnet's plugin never took the probe for a podnet pod, and no
// sandbox or container of the probe is left in the runtime.
func TestRootProbeNRIRuntimes(t *testing.T) {
	for _, c := range []struct {
		runtime   string
		validator bool
		want      nriprobe.Result
	}{
		{localcluster.RuntimeContainerd2, true, nriprobe.Enforced}, {localcluster.RuntimeContainerd2, false, nriprobe.Unenforced},
		{localcluster.RuntimeCRIO, true, nriprobe.Enforced}, {localcluster.RuntimeCRIO, false, nriprobe.Unenforced},
	} {
		t.Run(fmt.Sprintf("%s/validator=%v", c.runtime, c.validator), func(t *testing.T) {
			if os.Geteuid() != 0 {
				t.Fatalf("%s starts a container runtime: run it as root", t.Name())
			}
			ctr := critest.StartWith(t, testenv.RepoRoot(t), critest.Options{Runtime: c.runtime, NRIDefaultValidator: c.validator})
			var attaches atomic.Int32
			ctr.ConnectNRI(t, &agentnri.Plugin{Attacher: countingAttacher{&attaches}, Log: testr.New(t)})
			conn, err := grpc.NewClient("unix://"+ctr.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := nriprobe.New(conn).Probe(ctx)
			if err != nil || got != c.want {
				t.Fatalf("probe = %q, %v; want %q", got, err, c.want)
			}
			if n := attaches.Load(); n != 0 {
				t.Errorf("podnet's NRI plugin started %d attach(es) for the probe's pod; it is a plain pod", n)
			}
			checkNothingLeft(ctx, t, ctr.Runtime)
		})
	}
}

type countingAttacher struct{ n *atomic.Int32 }

func (a countingAttacher) Start(context.Context, cnisocket.Request) (agentnri.Attach, error) {
	a.n.Add(1)
	return nil, fmt.Errorf("not a podnet pod")
}

// checkNothingLeft fails the test when the runtime still has a sandbox or
// a container of the probe's.
func checkNothingLeft(ctx context.Context, t *testing.T, rt runtimeapi.RuntimeServiceClient) {
	t.Helper()
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range sbs.GetItems() {
		if sb.GetLabels()[nriprobe.ProbeLabel] != "" {
			t.Errorf("probe sandbox %s left in the runtime", sb.GetId())
		}
	}
	ctrs, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ctrs.GetContainers() {
		if c.GetLabels()[nriprobe.ProbeLabel] != "" {
			t.Errorf("probe container %s left in the runtime", c.GetId())
		}
	}
}
