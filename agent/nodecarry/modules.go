package nodecarry

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// configSymbols are the kernel config options of the modules podnet's
// link kinds use, for kernels that tell their config (/proc/config.gz)
// but list no module (everything built in, nothing in /sys/module for a
// driver without parameters).
var configSymbols = map[string]string{
	"8021q":     "CONFIG_VLAN_8021Q",
	"bridge":    "CONFIG_BRIDGE",
	"ipvlan":    "CONFIG_IPVLAN",
	"macvlan":   "CONFIG_MACVLAN",
	"veth":      "CONFIG_VETH",
	"vxlan":     "CONFIG_VXLAN",
	"wireguard": "CONFIG_WIREGUARD",
}

// Modules finds the kernel modules the node's kernel has: loaded
// (/sys/module/<name>), built in or loadable (modules.builtin and
// modules.dep of the running kernel's /lib/modules folder), or compiled
// in or as a module by its config (/proc/config.gz). A loadable module
// counts: the kernel loads a link kind's module when the first such
// link is made, so "loaded" alone would keep a fresh node from ever
// getting its first pod of that kind. Paths are settable for tests.
type Modules struct {
	SysModule  string // default /sys/module
	LibModules string // the running kernel's folder, default /lib/modules/<release>
	Config     string // default /proc/config.gz
}

// Have returns which of names the kernel has.
func (m Modules) Have(names []string) map[string]bool {
	out := map[string]bool{}
	var listed, config map[string]bool
	for _, n := range names {
		if exists(filepath.Join(or(m.SysModule, "/sys/module"), n)) {
			out[n] = true
			continue
		}
		if listed == nil {
			listed = m.listed()
		}
		if listed[n] {
			out[n] = true
			continue
		}
		if config == nil {
			config = configs.read(or(m.Config, "/proc/config.gz"))
		}
		if sym, ok := configSymbols[n]; ok && config[sym] {
			out[n] = true
		}
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// listed reads the module names of modules.builtin and modules.dep
// ("kernel/drivers/net/macvlan.ko.xz: ..."); missing files list nothing.
func (m Modules) listed() map[string]bool {
	dir := m.LibModules
	if dir == "" {
		dir = filepath.Join("/lib/modules", release())
	}
	out := map[string]bool{}
	for _, f := range []string{"modules.builtin", "modules.dep"} {
		file, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		s := bufio.NewScanner(file)
		for s.Scan() {
			path, _, _ := strings.Cut(s.Text(), ":")
			name, _, _ := strings.Cut(filepath.Base(path), ".ko")
			out[strings.ReplaceAll(name, "-", "_")] = true
		}
		file.Close()
	}
	return out
}

// configs keeps the last kernel config read, for as long as its file's
// time and size stay: the running kernel's never changes, and unpacking it
// at every probe cost more than the rest of the probe.
var configs configCache

type configCache struct {
	mu    sync.Mutex
	path  string
	mtime time.Time
	size  int64
	opts  map[string]bool
}

// read returns the options of the config at path, read again only when
// the file is another.
func (c *configCache) read(path string) map[string]bool {
	fi, err := os.Stat(path)
	if err != nil {
		return map[string]bool{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.opts == nil || c.path != path || !c.mtime.Equal(fi.ModTime()) || c.size != fi.Size() {
		c.path, c.mtime, c.size, c.opts = path, fi.ModTime(), fi.Size(), readConfig(path)
	}
	return c.opts
}

// readConfig reads the options set to y or m of a gzip'd kernel config;
// an unreadable one sets none.
func readConfig(path string) map[string]bool {
	out := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return out
		}
		defer z.Close()
		r = z
	}
	s := bufio.NewScanner(r)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok && (v == "y" || v == "m") {
			out[k] = true
		}
	}
	return out
}
