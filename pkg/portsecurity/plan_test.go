package portsecurity

import (
	"net"
	"slices"
	"strings"
	"testing"
)

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ips(ss ...string) []net.IP {
	var out []net.IP
	for _, s := range ss {
		out = append(out, net.ParseIP(s))
	}
	return out
}

func strs(in []net.IP) []string {
	var out []string
	for _, ip := range in {
		out = append(out, ip.String())
	}
	return out
}

func TestPlanPortAllowsOwnAddressesAndLinkLocal(t *testing.T) {
	mac := mustMAC(t, "02:aa:bb:cc:dd:01")
	pl, err := PlanPort(Port{
		Name: "pn0123456789abc", MAC: mac,
		Addresses: ips("fd00::7", "192.168.1.7", "192.168.1.7", "10.0.0.1"),
		LinkLocal: ips("fe80::1234"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strs(pl.IPv4), []string{"10.0.0.1", "192.168.1.7"}; !slices.Equal(got, want) {
		t.Errorf("IPv4 = %v, want %v (sorted, unique)", got, want)
	}
	// The EUI-64 link-local of 02:aa:bb:cc:dd:01 flips the U/L bit: 00aa:bbff:fecc:dd01.
	if got, want := strs(pl.IPv6), []string{"fd00::7", "fe80::1234", "fe80::aa:bbff:fecc:dd01"}; !slices.Equal(got, want) {
		t.Errorf("IPv6 = %v, want %v", got, want)
	}
	for _, ip := range pl.IPv4 {
		if len(ip) != net.IPv4len {
			t.Errorf("IPv4 %s is %d bytes, want 4 (the set's key length)", ip, len(ip))
		}
	}
	if pl.Port != "pn0123456789abc" || pl.MAC.String() != mac.String() || pl.Fingerprint == "" {
		t.Errorf("plan = %+v", pl)
	}
}

func TestPlanPortFingerprintFollowsContent(t *testing.T) {
	base := Port{Name: "pnx", MAC: mustMAC(t, "02:00:00:00:00:01"), Addresses: ips("10.0.0.1", "fd00::1")}
	fp := func(p Port) string {
		t.Helper()
		pl, err := PlanPort(p)
		if err != nil {
			t.Fatal(err)
		}
		return pl.Fingerprint
	}
	reordered := base
	reordered.Addresses = ips("fd00::1", "10.0.0.1", "10.0.0.1")
	if fp(base) != fp(reordered) {
		t.Error("the same addresses in another order or repeated give another fingerprint")
	}
	for name, p := range map[string]Port{
		"address": {Name: "pnx", MAC: base.MAC, Addresses: ips("10.0.0.2", "fd00::1")},
		"mac":     {Name: "pnx", MAC: mustMAC(t, "02:00:00:00:00:02"), Addresses: base.Addresses},
		"port":    {Name: "pny", MAC: base.MAC, Addresses: base.Addresses},
		"ll":      {Name: "pnx", MAC: base.MAC, Addresses: base.Addresses, LinkLocal: ips("fe80::9")},
	} {
		if fp(p) == fp(base) {
			t.Errorf("another %s gives the same fingerprint", name)
		}
	}
}

func TestPlanPortRefusesBadInput(t *testing.T) {
	mac := mustMAC(t, "02:00:00:00:00:01")
	for name, tc := range map[string]struct {
		p    Port
		want string
	}{
		"no name":           {Port{MAC: mac}, "port name: must not be empty"},
		"long name":         {Port{Name: "pn0123456789abcd", MAC: mac}, "at most 15 characters"},
		"base chain name":   {Port{Name: "ports", MAC: mac}, "taken by the table's base chain"},
		"slash":             {Port{Name: "a/b", MAC: mac}, "printable ASCII"},
		"no mac":            {Port{Name: "pnx"}, `mac "": must be a 6-byte unicast address`},
		"multicast mac":     {Port{Name: "pnx", MAC: mustMAC(t, "01:00:5e:00:00:01")}, "unicast"},
		"zero mac":          {Port{Name: "pnx", MAC: mustMAC(t, "00:00:00:00:00:00")}, "unicast"},
		"long mac":          {Port{Name: "pnx", MAC: mustMAC(t, "02:00:00:00:00:00:00:01")}, "6-byte"},
		"nil address":       {Port{Name: "pnx", MAC: mac, Addresses: []net.IP{nil}}, "addresses[0]: address"},
		"short address":     {Port{Name: "pnx", MAC: mac, Addresses: []net.IP{{1, 2}}}, "not an IP address"},
		"unspecified":       {Port{Name: "pnx", MAC: mac, Addresses: ips("10.0.0.1", "0.0.0.0")}, "addresses[1]: address 0.0.0.0: must be a unicast"},
		"multicast":         {Port{Name: "pnx", MAC: mac, Addresses: ips("ff02::1")}, "must be a unicast"},
		"broadcast":         {Port{Name: "pnx", MAC: mac, Addresses: ips("255.255.255.255")}, "must be a unicast"},
		"global link-local": {Port{Name: "pnx", MAC: mac, LinkLocal: ips("fd00::1")}, "linkLocal[0]: address fd00::1: not an IPv6 link-local"},
		"v4 link-local":     {Port{Name: "pnx", MAC: mac, LinkLocal: ips("169.254.0.1")}, "not an IPv6 link-local"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PlanPort(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLinkLocalOf(t *testing.T) {
	for mac, want := range map[string]string{
		"00:11:22:33:44:55": "fe80::211:22ff:fe33:4455",
		"02:42:ac:11:00:02": "fe80::42:acff:fe11:2",
	} {
		if got := LinkLocalOf(mustMAC(t, mac)).String(); got != want {
			t.Errorf("LinkLocalOf(%s) = %s, want %s", mac, got, want)
		}
	}
}

func FuzzPlanPort(f *testing.F) {
	f.Add("pnx", []byte{2, 0, 0, 0, 0, 1}, []byte{10, 0, 0, 1}, []byte(net.ParseIP("fe80::1")))
	f.Fuzz(func(t *testing.T, name string, mac, addr, ll []byte) {
		pl, err := PlanPort(Port{Name: name, MAC: mac, Addresses: []net.IP{addr}, LinkLocal: []net.IP{ll}})
		if err != nil {
			return
		}
		if pl.Fingerprint == "" || len(pl.MAC) != 6 || len(pl.IPv4)+len(pl.IPv6) < 2 {
			t.Fatalf("accepted plan is incomplete: %+v", pl)
		}
		for _, ip := range pl.IPv4 {
			if len(ip) != 4 {
				t.Fatalf("IPv4 %v not 4 bytes", ip)
			}
		}
		for _, ip := range pl.IPv6 {
			if len(ip) != 16 || ip.To4() != nil {
				t.Fatalf("IPv6 %v not a 16-byte IPv6 address", ip)
			}
		}
	})
}
