package dataplane

import (
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/vishvananda/netns"

	"podnet.io/podnet/pkg/hostdev"
)

// netdevsimBus is where the kernel's emulated NICs are made and removed.
const netdevsimBus = "/sys/bus/netdevsim"

// newNetdevsimPF makes an emulated NIC in the node's netns with vfs
// SR-IOV VFs and returns its netdev's name. netdevsim keeps the PF side of
// its VFs (MAC, VLAN, spoof check, trust) as a real PF does, but makes no
// VF netdevs; the test names stand-ins (vfStandIns). It skips on a
// kernel without netdevsim (Debian ships none: the kernel VM stage builds
// it and always runs this).
func newNetdevsimPF(t *testing.T, node string, vfs int) string {
	t.Helper()
	if _, err := os.Stat(netdevsimBus); err != nil {
		t.Skipf("this kernel has no netdevsim (%s): the kernel VM stage (make test-kernel) runs this test", netdevsimBus)
	}
	ns, err := netns.GetFromName(node)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	id, err := strconv.ParseUint(randomHex(2), 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	id = 1000 + id%8000
	// A netdevsim device's netdevs are made in the netns of the thread
	// that asks for it.
	if err := inNetNS(ns, func() error {
		return os.WriteFile(netdevsimBus+"/new_device", []byte(fmt.Sprintf("%d 1", id)), 0)
	}); err != nil {
		t.Fatalf("new netdevsim device %d: %v", id, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(netdevsimBus+"/del_device", []byte(fmt.Sprint(id)), 0); err != nil {
			t.Errorf("remove netdevsim device %d: %v", id, err)
		}
	})
	dev := fmt.Sprintf("%s/devices/netdevsim%d", netdevsimBus, id)
	if err := os.WriteFile(dev+"/sriov_numvfs", []byte(fmt.Sprint(vfs)), 0); err != nil {
		t.Fatalf("netdevsim%d: enable %d VFs: %v", id, vfs, err)
	}
	et, err := openEthtool(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer et.close()
	for _, name := range linkNames(t, node) {
		if driver, bus, _ := et.drvInfo(name); driver == "netdevsim" && bus == fmt.Sprintf("netdevsim%d", id) {
			return name
		}
	}
	t.Fatalf("netdevsim%d: no netdev in the node's netns", id)
	return ""
}

// vfStandIns makes dummy links named <pf>v<i> on the node, stand-ins for
// the VF netdevs of pf, and the lookup that names them so.
func vfStandIns(t *testing.T, node, pf string, n int) VFLookup {
	t.Helper()
	index := map[string]int{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%sv%d", pf, i)
		run(t, "ip", "-n", node, "link", "add", name, "type", "dummy")
		index[name] = i
	}
	return func(nic hostdev.NIC) (hostdev.NIC, int, bool) {
		i, ok := index[nic.Name]
		return hostdev.NIC{Name: pf, Driver: "netdevsim"}, i, ok
	}
}

// requireVF asserts what the PF holds for its VF.
func requireVF(t *testing.T, node, pf string, index int, mac string, vlan int, spoofCheck, trust bool) {
	t.Helper()
	for _, vf := range mustLink(t, node, pf).Attrs().Vfs {
		if vf.ID != index {
			continue
		}
		if vf.Mac.String() != mac || vf.Vlan != vlan || vf.Spoofchk != spoofCheck || (vf.Trust != 0) != trust {
			t.Fatalf("PF %s VF %d: mac %s vlan %d spoofchk %t trust %d; want mac %s vlan %d spoofchk %t trust %t",
				pf, index, vf.Mac, vf.Vlan, vf.Spoofchk, vf.Trust, mac, vlan, spoofCheck, trust)
		}
		return
	}
	t.Fatalf("PF %s has no VF %d", pf, index)
}

// TestRootVF: a VF of an emulated PF is taken into the pod with its MAC,
// VLAN, spoof check and trust set on the PF first; settings changed on
// the PF behind podnet's back are put back; a VF given back to the node
// is reset there (no MAC, untagged, spoof check on, not trusted); the PF
// itself is never taken.
func TestRootVF(t *testing.T) {
	d, node := newNode(t)
	pf := newNetdevsimPF(t, node, 3)
	d.VFs = vfStandIns(t, node, pf, 3)
	mac := "02:00:00:00:0f:01"
	vfIfc := func(vlan int, mac string, set VFSettings) []Interface {
		ifc := Interface{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{pf}, VFs: true}, VF: &set, VLAN: vlan,
			Addresses: []net.IPNet{cidr(t, "192.168.71.1/24")}}
		if mac != "" {
			ifc.MAC, _ = net.ParseMAC(mac)
		}
		return []Interface{ifc}
	}
	nsA, a := newPod(t)
	nsB, b := newPod(t)
	ctx := context.Background()

	t.Run("TakenWithItsSettingsOnThePF", func(t *testing.T) {
		a.Interfaces = vfIfc(120, mac, VFSettings{SpoofCheck: true})
		st := apply(t, d, a)
		if len(st) != 1 || st[0].MAC != mac {
			t.Fatalf("pod A's status %+v; want the approved MAC %s", st, mac)
		}
		requireVF(t, node, pf, 0, mac, 120, true, false)
		if l := mustLink(t, nsA, "net1"); l.Attrs().HardwareAddr.String() != mac {
			t.Fatalf("net1 in pod A has MAC %s, want %s", l.Attrs().HardwareAddr, mac)
		}
		if slices.Contains(linkNames(t, node), pf+"v0") {
			t.Fatalf("%sv0 is still on the node", pf)
		}
		requireIdempotent(t, d, a, nsA, node)
	})

	t.Run("SettingsChangedOnThePFArePutBack", func(t *testing.T) {
		h := handle(t, node)
		p := mustLink(t, node, pf)
		if err := h.LinkSetVfVlan(p, 0, 7); err != nil {
			t.Fatal(err)
		}
		if err := h.LinkSetVfSpoofchk(p, 0, false); err != nil {
			t.Fatal(err)
		}
		apply(t, d, a)
		requireVF(t, node, pf, 0, mac, 120, true, false)
		if got := mustLink(t, nsA, "net1").Attrs().HardwareAddr.String(); got != mac {
			t.Fatalf("net1 in pod A has MAC %s after the VF was taken anew, want %s", got, mac)
		}
		requireNoSteps(t, d, a)
	})

	t.Run("EachPodItsOwnVF", func(t *testing.T) {
		b.Interfaces = vfIfc(0, "", VFSettings{Trust: true})
		apply(t, d, b)
		requireVF(t, node, pf, 1, "00:00:00:00:00:00", 0, false, true)
		if got := linkNames(t, nsB); !slices.Contains(got, "net1") {
			t.Fatalf("pod B holds %v", got)
		}
		requireVF(t, node, pf, 0, mac, 120, true, false)
	})

	t.Run("ResetWhenGivenBack", func(t *testing.T) {
		for _, p := range []Pod{a, b} {
			if err := d.Detach(ctx, p.UID, p.NetNS); err != nil {
				t.Fatal(err)
			}
		}
		for i := 0; i < 2; i++ {
			requireVF(t, node, pf, i, "00:00:00:00:00:00", 0, true, false)
			name := fmt.Sprintf("%sv%d", pf, i)
			if l := mustLink(t, node, name); len(l.Attrs().AltNames) != 0 {
				t.Fatalf("%s back on the node with altnames %v", name, l.Attrs().AltNames)
			}
		}
		if got := linkNames(t, nsA); len(got) != 0 {
			t.Fatalf("pod A after detach: %v", got)
		}
	})

	t.Run("ThePFStaysOnTheNode", func(t *testing.T) {
		_, p := newPod(t)
		p.Interfaces = []Interface{{Name: "net1", Kind: KindHostDevice, Devices: &DeviceSelector{Names: []string{pf}}}}
		_, err := d.Apply(ctx, p)
		requireMentions(t, err, "no free host device", pf+" (the PF of SR-IOV VFs)")
	})

	t.Run("NoVFLeftWaits", func(t *testing.T) {
		// Three stand-ins, three pods; a fourth waits naming the selector.
		var pods []Pod
		for i := 0; i < 3; i++ {
			_, p := newPod(t)
			p.Interfaces = vfIfc(0, "", VFSettings{SpoofCheck: true})
			apply(t, d, p)
			pods = append(pods, p)
		}
		_, p := newPod(t)
		p.Interfaces = vfIfc(0, "", VFSettings{SpoofCheck: true})
		_, err := d.Apply(ctx, p)
		requireMentions(t, err, `"net1"`, "no free host device", "VFs of names "+pf)
		for _, p := range pods {
			if err := d.Detach(ctx, p.UID, p.NetNS); err != nil {
				t.Fatal(err)
			}
		}
	})
}
