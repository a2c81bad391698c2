//go:build bench

package image

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"podnet.io/podnet/test/bench"
	"podnet.io/podnet/webhook"
)

// TestBenchWaitContainerStart times what the wait init container costs a
// pod's start on the node, whose CPU limit also paces runc's own work in
// the container's cgroup: `ctr run` of a container that waits for lo
// (present, so it exits at once), from create to exit and removal, in a
// real containerd with the native snapshotter the local cluster uses. It
// compares the wait image under the webhook's default memory with no CPU
// limit, 10m, the default and 50m, and the agent image running
// `podnet-agent wait` under the former default amounts (20m, 48Mi). The
// variants alternate, round after round; each figure is the median.
func TestBenchWaitContainerStart(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("TestBenchWaitContainerStart starts containerd and runs containers: run it as root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, pkg := range AgentCommands {
		if err := BuildGoBinary(ctx, root, pkg, filepath.Join(bin, filepath.Base(pkg))); err != nil {
			t.Fatal(err)
		}
	}
	const tag = "bench"
	built, err := WriteSpecs(t.TempDir(), AgentSpec(bin, tag), WaitSpec(bin, tag))
	if err != nil {
		t.Fatal(err)
	}
	c := startContainerd(t)
	for ref, p := range built {
		if _, err := c.ctr(ctx, "images", "import", "--snapshotter", "native", p); err != nil {
			t.Fatalf("import %s: %v", ref, err)
		}
	}
	mem := resource.MustParse(webhook.DefaultWaitMemory)
	def := resource.MustParse(webhook.DefaultWaitCPU)
	waitCmd := []string{Ref(WaitName, tag), WaitBinary}
	type variant struct {
		name     string
		cpu, mem string // ctr's --cpus (cores) and --memory-limit (bytes)
		cmd      []string
	}
	variants := []variant{
		{"wait_image_no_cpu_limit", "0", fmt.Sprint(mem.Value()), waitCmd},
		{"wait_image_cpu_10m", "0.01", fmt.Sprint(mem.Value()), waitCmd},
		{"wait_image_cpu_" + def.String(), fmt.Sprint(float64(def.MilliValue()) / 1000), fmt.Sprint(mem.Value()), waitCmd},
		{"wait_image_cpu_50m", "0.05", fmt.Sprint(mem.Value()), waitCmd},
		{"agent_image_cpu_20m_48Mi", "0.02", fmt.Sprint(48 << 20), []string{Ref(AgentName, tag), AgentBinary, "wait"}},
	}
	rounds := bench.Size(7, 1)
	took := make([][]time.Duration, len(variants))
	for range rounds {
		for i, v := range variants {
			id := containerID(t)
			args := append([]string{"run", "--rm", "--snapshotter", "native", "--cpus", v.cpu, "--memory-limit", v.mem, v.cmd[0], id}, v.cmd[1:]...)
			start := time.Now()
			out, err := c.ctr(ctx, append(args, "--interfaces", "lo", "--timeout", "10s")...)
			took[i] = append(took[i], time.Since(start))
			c.removeContainer(t, id)
			if err != nil {
				t.Fatalf("%s: %v\n%s", v.name, err, out)
			}
		}
	}
	for i, v := range variants {
		slices.Sort(took[i])
		fmt.Printf("BENCH wait_container_run_%s_p50 %.0f ms\n", v.name, float64(took[i][rounds/2])/float64(time.Millisecond))
	}
}
