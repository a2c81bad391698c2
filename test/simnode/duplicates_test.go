package simnode

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func statusPod(name, status string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.NetworkStatusAnnotation: status}}}
}

func entry(network, iface, ip string, def bool) string {
	return fmt.Sprintf(`{"name":%q,"interface":%q,"ips":[%q],"default":%t,"dns":{}}`, network, iface, ip, def)
}

func TestDuplicateAddressesCountsOnlyPodnetsOnOneNetwork(t *testing.T) {
	cases := []struct {
		name string
		pods []corev1.Pod
		want int
	}{
		{"distinct", []corev1.Pod{
			statusPod("a", "["+entry("cluster-network", "eth0", PodIP("a"), true)+","+entry("ns/data", "net1", "192.168.0.2", false)+"]"),
			statusPod("b", "["+entry("cluster-network", "eth0", PodIP("b"), true)+","+entry("ns/data", "net1", "192.168.0.3", false)+"]"),
		}, 0},
		{"one address given twice on one network", []corev1.Pod{
			statusPod("a", "["+entry("ns/data", "net1", "192.168.0.2", false)+"]"),
			statusPod("b", "["+entry("ns/data", "net1", "192.168.0.2", false)+"]"),
		}, 1},
		{"same address on two networks is not one", []corev1.Pod{
			statusPod("a", "["+entry("ns/data", "net1", "192.168.0.2", false)+"]"),
			statusPod("b", "["+entry("ns/other", "net1", "192.168.0.2", false)+"]"),
		}, 0},
		{"the default network's eth0 is not podnet's", []corev1.Pod{
			statusPod("a", "["+entry("cluster-network", "eth0", "10.0.0.1", true)+"]"),
			statusPod("b", "["+entry("cluster-network", "eth0", "10.0.0.1", true)+"]"),
		}, 0},
		{"unreadable status counts", []corev1.Pod{statusPod("a", "{")}, 1},
	}
	for _, c := range cases {
		if got := DuplicateAddresses(c.pods); got != c.want {
			t.Errorf("%s: %d duplicates, want %d", c.name, got, c.want)
		}
	}
}

func TestPodIPIsStableAndNeverShared(t *testing.T) {
	seen := map[string]string{}
	for i := range 70000 {
		uid := fmt.Sprintf("uid-%d", i)
		ip := PodIP(uid)
		if ip != PodIP(uid) {
			t.Fatalf("PodIP(%q) changed between calls", uid)
		}
		if other, ok := seen[ip]; ok {
			t.Fatalf("PodIP gave %s to %q and %q", ip, other, uid)
		}
		seen[ip] = uid
	}
}
