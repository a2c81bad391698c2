package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	podnetv1 "podnet.io/podnet/api/v1alpha1"
)

// nadStatus is the NAD client's NetworkStatus (v1.7.7), copied field for
// field so that a strict decode proves tools of that ecosystem read what
// the agent writes. test/multusdiff checks the same with the NAD client
// itself.
type nadStatus struct {
	Name       string           `json:"name"`
	Interface  string           `json:"interface,omitempty"`
	IPs        []string         `json:"ips,omitempty"`
	Mac        string           `json:"mac,omitempty"`
	Mtu        int              `json:"mtu,omitempty"`
	Default    bool             `json:"default,omitempty"`
	DNS        nadDNS           `json:"dns,omitempty"`
	DeviceInfo *json.RawMessage `json:"device-info,omitempty"`
	Gateway    []string         `json:"gateway,omitempty"`
}

type nadDNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// multusRequest is what a pod written for Multus carries: the second
// network's interface by name, the first by position.
const multusRequest = "data, extra@net5"

// testMultusPod turns on the migration setting (the kustomize component
// deploy/components/multus-migration on top of the local install) and
// checks that a pod written for Multus comes up with Multus' interface
// names, addresses from the profile's pools, and the network-status under
// Multus' key with the default network first.
func (s *suite) testMultusPod(t *testing.T) {
	s.applyMultusMigration(t)
	const name = "multus-app"
	s.apply(t, podAsking(name, podnetv1.MultusNetworksAnnotation, multusRequest))
	t.Cleanup(func() {
		if t.Failed() {
			// What the pod and the webhook say, for the failure's reader.
			for _, args := range [][]string{
				{"-n", tenantNS, "get", "pod", name, "-o", "yaml"},
				{"-n", tenantNS, "get", "events", "--field-selector", "involvedObject.name=" + name},
				{"-n", "podnet-system", "logs", "deployment/podnet-webhook", "--tail=30"},
			} {
				out, err := s.kubectlErr("", args...)
				t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
		s.kubectl(t, "", "-n", tenantNS, "delete", "pod", name, "--wait=false")
	})

	var pod corev1.Pod
	var st []nadStatus
	eventually(t, 3*time.Minute, "the Multus pod Ready with its network-status", func(ctx context.Context) error {
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: tenantNS, Name: name}, &pod); err != nil {
			return err
		}
		if !ready(pod) {
			return fmt.Errorf("pod not Ready: %+v", pod.Status.Conditions)
		}
		var err error
		st, err = strictNADStatus(pod.Annotations[podnetv1.MultusNetworkStatusAnnotation])
		if err != nil {
			return err
		}
		if len(st) != 3 || len(st[0].IPs) == 0 {
			return fmt.Errorf("network-status %s: want the default entry with the pod IPs and two more", pod.Annotations[podnetv1.MultusNetworkStatusAnnotation])
		}
		return nil
	})
	if got := pod.Annotations[podnetv1.NetworksAnnotation]; got != multusRequest {
		t.Errorf("%s = %q, want the copy of Multus' request", podnetv1.NetworksAnnotation, got)
	}
	if own := pod.Annotations[podnetv1.NetworkStatusAnnotation]; own != pod.Annotations[podnetv1.MultusNetworkStatusAnnotation] {
		t.Errorf("the two status annotations differ:\n%s\n%s", own, pod.Annotations[podnetv1.MultusNetworkStatusAnnotation])
	}
	var podIPs []string
	for _, ip := range pod.Status.PodIPs {
		podIPs = append(podIPs, ip.IP)
	}
	if d := st[0]; !d.Default || d.Interface != "eth0" || !slices.Equal(d.IPs, podIPs) {
		t.Errorf("default entry %+v, want eth0, default, the pod IPs %v", d, podIPs)
	}
	s.checkMultusInterface(t, name, st[1], tenantNS+"/data", "net1", "192.168.50.0/24", "fd00:50::/64")
	s.checkMultusInterface(t, name, st[2], tenantNS+"/extra", "net5", "192.168.51.0/24")
}

// checkMultusInterface checks one status entry against its pools and
// against the addresses the interface has inside the pod.
func (s *suite) checkMultusInterface(t *testing.T, pod string, e nadStatus, network, iface string, pools ...string) {
	t.Helper()
	if e.Name != network || e.Interface != iface || len(e.IPs) != len(pools) {
		t.Errorf("entry %+v, want network %s on %s with one address from each of %v", e, network, iface, pools)
		return
	}
	out, err := s.exec(pod, "ip", "addr", "show", iface)
	if err != nil {
		t.Errorf("interface %s in the pod: %v", iface, err)
		return
	}
	for i, ip := range e.IPs {
		addr, err := netip.ParseAddr(ip)
		if err != nil || !netip.MustParsePrefix(pools[i]).Contains(addr) {
			t.Errorf("%s address %q not in pool %s", iface, ip, pools[i])
		}
		if !strings.Contains(out, " "+ip+"/") {
			t.Errorf("%s: status says %s, the pod has:\n%s", iface, ip, out)
		}
	}
}

// strictNADStatus decodes a network-status as the NAD type, refusing any
// key that type does not know.
func strictNADStatus(raw string) ([]nadStatus, error) {
	if raw == "" {
		return nil, fmt.Errorf("no %s", podnetv1.MultusNetworkStatusAnnotation)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var st []nadStatus
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("decode %s %q: %w", podnetv1.MultusNetworkStatusAnnotation, raw, err)
	}
	return st, nil
}

// applyMultusMigration applies the local install plus the migration
// component, and puts the plain local install back when the test ends.
func (s *suite) applyMultusMigration(t *testing.T) {
	t.Helper()
	local := filepath.Join(s.in.Root, "_output", "deploy", "local")
	dir := filepath.Join(s.in.Root, "_output", "deploy", "multus-migration-e2e")
	kust := `# Generated by the e2e suite: the local install reading Multus' annotation.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../local
components:
- ../../../deploy/components/multus-migration
`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kust), 0o644); err != nil {
		t.Fatal(err)
	}
	rollout := func() {
		s.kubectl(t, "", "-n", "podnet-system", "rollout", "status", "deployment/podnet-webhook", "--timeout=180s")
	}
	// As hack/deploy.sh applies: server-side, with its field manager, so
	// that what the other install no longer says (the narrower match
	// condition, the flag) goes away instead of adding up.
	deploy := func(dir string) {
		s.kubectl(t, "", "apply", "--server-side", "--field-manager=podnet-deploy", "--force-conflicts", "-k", dir)
	}
	deploy(dir)
	t.Cleanup(func() {
		deploy(local)
		rollout()
	})
	rollout()
}
