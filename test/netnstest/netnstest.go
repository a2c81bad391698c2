// Package netnstest holds what root tests of network code share: a loud
// root check, throwaway named network namespaces and running commands.
// Test tooling only; it never touches the machine's own netns.
package netnstest

import (
	"crypto/rand"
	"encoding/hex"
	"github.com/google/nftables"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// RequireRoot stops a root test loudly: `make test` runs as root, so a
// skipped root test would hide a broken setup.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test needs root (network namespaces and netlink); run it as root")
	}
}

// RandomHex is n random bytes in hex, for unique names.
func RandomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Run runs a command and fails the test with its output on error.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// NewNetNS creates a throwaway named netns, prefix-role-<random>, with lo
// up, and removes it when the test ends.
func NewNetNS(t testing.TB, prefix, role string) (name, path string) {
	t.Helper()
	name = prefix + "-" + role + "-" + RandomHex(4)
	Run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	Run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name, filepath.Join("/run/netns", name)
}

// Handle is a netlink handle bound to the named network namespace, closed
// when the test ends: the test's own thread never enters it.
func Handle(t testing.TB, name string) *netlink.Handle {
	t.Helper()
	nsh, err := netns.GetFromName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer nsh.Close()
	h, err := netlink.NewHandleAt(nsh)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// BridgeTables lists the bridge-family nftables tables of the netns whose
// fd is netns.
func BridgeTables(t testing.TB, netns int) []string {
	t.Helper()
	c, err := nftables.New(nftables.WithNetNSFd(netns))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyBridge)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tb := range tables {
		out = append(out, tb.Name)
	}
	return out
}
