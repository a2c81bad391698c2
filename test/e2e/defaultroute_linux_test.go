package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// defaultRouteProfile grants tenant-a a network that may carry the pod's
// default route.
const defaultRouteProfile = `
apiVersion: podnet.io/v1alpha1
kind: NetworkProfile
metadata:
  name: e2e-default-route
spec:
  namespaceSelector:
    matchLabels: {tenant: a}
  networks:
  - name: egress
    bridge: {name: pnbr-e2d}
    ipam:
      pools: ["192.168.52.0/24"]
      gateways: ["192.168.52.1"]
    defaultRoute: {allowed: true}
`

// testDefaultRoute: where the profile allows it, Multus' default-route key
// moves the pod's default route to the interface; removing the request
// brings eth0's back; where the profile does not allow it the pod is
// refused with the reason.
func (s *suite) testDefaultRoute(t *testing.T) {
	s.apply(t, defaultRouteProfile)
	t.Cleanup(func() { s.kubectl(t, "", "delete", "networkprofile", "e2e-default-route", "--wait=false") })
	s.waitWebhookOffers(t, tenantNS, "egress", "192.168.52.0/24")
	const name = "default-route"
	request := `[{"name":"egress","default-route":["192.168.52.1"]}]`
	s.apply(t, podAsking(name, podnetv1.NetworksAnnotation, request))
	t.Cleanup(func() { s.kubectl(t, "", "-n", tenantNS, "delete", "pod", name, "--wait=false") })

	eventually(t, 3*time.Minute, "the default route via net1", func(ctx context.Context) error {
		routes, err := s.defaultRoutes(name)
		if err != nil {
			return err
		}
		// eth0's gateway is the node's CNI bridge: the first address of
		// the node's pod CIDR, which depends on the cluster's name.
		eth0 := "default via " + s.podGateway(t, name).String() + " dev eth0 metric "
		if len(routes) != 2 || routes[0] != "default via 192.168.52.1 dev net1" || !strings.HasPrefix(routes[1], eth0) {
			return fmt.Errorf("default routes %q: want via 192.168.52.1 dev net1, then eth0's demoted", routes)
		}
		return nil
	})

	// The request goes at runtime: eth0 carries the default route again.
	s.kubectl(t, "", "-n", tenantNS, "annotate", "pod", name, "--overwrite", podnetv1.NetworksAnnotation+"=")
	eventually(t, 2*time.Minute, "the default route back on eth0", func(ctx context.Context) error {
		routes, err := s.defaultRoutes(name)
		if err != nil {
			return err
		}
		if len(routes) != 1 || !strings.HasSuffix(routes[0], " dev eth0") {
			return fmt.Errorf("default routes %q: want eth0's alone, with its own metric", routes)
		}
		return nil
	})

	// A network without the grant: refused, naming the reason.
	_, err := s.kubectlErr(podAsking("default-route-refused", podnetv1.NetworksAnnotation, `[{"name":"data","default-route":["192.168.50.1"]}]`), "apply", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "does not let this network carry the pod's default route") {
		t.Fatalf("a pod asking for the default route on network data: err = %v, want the refusal naming defaultRoute", err)
	}
}

// defaultRoutes lists the pod's IPv4 default routes, spaces normalised.
// busybox's ip ignores the "default" selector, so the lines are filtered.
func (s *suite) defaultRoutes(pod string) ([]string, error) {
	out, err := s.exec(pod, "ip", "route", "show")
	if err != nil {
		return nil, err
	}
	var routes []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "default" {
			routes = append(routes, strings.Join(f, " "))
		}
	}
	return routes, nil
}

// podAsking is a pod on node1 with one annotation.
func podAsking(name, key, value string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  annotations: {%s: %q}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: localhost/podnet/busybox:dev
    imagePullPolicy: Never
    command: ["sleep", "86400"]
`, name, tenantNS, key, value, node1)
}

// podGateway is the default gateway the CNI gives pod name's eth0: the first
// address of its node's pod CIDR.
func (s *suite) podGateway(t *testing.T, name string) netip.Addr {
	t.Helper()
	pod := s.getPod(t, tenantNS, name)
	var node corev1.Node
	if err := s.client.Get(context.Background(), client.ObjectKey{Name: pod.Spec.NodeName}, &node); err != nil {
		t.Fatal(err)
	}
	cidr, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s: pod CIDR %q: %v", node.Name, node.Spec.PodCIDR, err)
	}
	return cidr.Masked().Addr().Next()
}
