package image

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"podnet.io/podnet/pkg/version"
)

// Spec says what goes into one image: a single layer of files and the
// process configuration.
type Spec struct {
	// Name is the image's full reference, e.g. WebhookImage.
	Name       string
	Files      []File
	Entrypoint []string
	Cmd        []string
	User       string
	Env        []string
	// Labels go into the image configuration (OCI annotations such as
	// VersionLabel).
	Labels map[string]string
}

// File is one entry of the image's layer. Exactly one of Source, Data, Link
// or Dir says what it is. Parent directories are added automatically.
type File struct {
	// Path is absolute inside the image.
	Path string
	// Mode holds the permission bits; zero means 0644 for files, 0755 for
	// directories.
	Mode int64
	// Source is a host file whose content is copied.
	Source string
	Data   []byte
	// Link is a symbolic link's target.
	Link string
	Dir  bool
}

// requiredApplets are the busybox commands tests and docs rely on; building
// the busybox image fails when the host's busybox lacks one.
var requiredApplets = []string{"sh", "ip", "ping", "sleep", "cat", "ls", "ifconfig", "wget", "nc", "echo", "grep", "arping"}

// defaultPath is PATH in every image, so commands such as `podnet-wait`
// resolve without their directory.
const defaultPath = "PATH=" + BinDir + ":/usr/bin:/bin"

// baseFiles are the minimum a process expects: user names for 0 and 65532
// (so tools that look up the current user do not fail) and a writable /tmp.
func baseFiles() []File {
	return []File{
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/root", Dir: true, Mode: 0o700},
		{Path: "/home/nonroot", Dir: true, Mode: 0o755},
	}
}

// BinarySpec is the image of one static binary at inImage, run as user
// (NonRootUser when empty) with the binary as entrypoint.
func BinarySpec(ref, binary, inImage, user string) Spec {
	if user == "" {
		user = NonRootUser
	}
	return Spec{
		Name:       ref,
		Files:      append(baseFiles(), File{Path: inImage, Source: binary, Mode: 0o755}),
		Entrypoint: []string{inImage},
		User:       user,
		Env:        []string{defaultPath},
	}
}

// WebhookSpec is the webhook image from the binary `make build` wrote.
func WebhookSpec(binDir, tag string) Spec {
	return BinarySpec(Ref(WebhookName, tag), filepath.Join(binDir, "podnet-webhook"), WebhookBinary, NonRootUser)
}

// AgentSpec is the agent image. It runs as non-root by default, as every
// podnet image; the DaemonSet asks for root and its capabilities in its
// securityContext. It also carries the chained CNI plugin (podnet-cni,
// from binDir) for the DaemonSet's install-cni init container, and
// podnet-wait, which the agent installs on the node as its NRI plugin's
// wait hook (--nri-hook).
func AgentSpec(binDir, tag string) Spec {
	s := BinarySpec(Ref(AgentName, tag), filepath.Join(binDir, "podnet-agent"), AgentBinary, NonRootUser)
	s.Files = append(s.Files,
		File{Path: CNIPluginBinary, Source: filepath.Join(binDir, "podnet-cni"), Mode: 0o755},
		File{Path: WaitBinary, Source: filepath.Join(binDir, "podnet-wait"), Mode: 0o755})
	return s
}

// WaitSpec is the image of the init container the webhook injects into
// every podnet pod: the stripped podnet-wait binary alone, non-root. It is
// apart from the agent image so that a node pulls, stores and maps about
// 2 MB for it instead of the whole agent.
func WaitSpec(binDir, tag string) Spec {
	return BinarySpec(Ref(WaitName, tag), filepath.Join(binDir, "podnet-wait"), WaitBinary, NonRootUser)
}

// ComponentSpecs are the images of podnet's own binaries, as `make build`
// writes them to binDir: what `make image` builds, `make push` pushes and
// the installer imports.
func ComponentSpecs(binDir, tag string) []Spec {
	specs := []Spec{WebhookSpec(binDir, tag), AgentSpec(binDir, tag), WaitSpec(binDir, tag), ControllerSpec(binDir, tag)}
	for i := range specs {
		specs[i].Labels = releaseLabels()
	}
	return specs
}

// VersionLabel is the OCI label that names the podnet release an image
// holds, whatever its tag says.
const VersionLabel = "org.opencontainers.image.version"

// releaseLabels name the release of pkg/version (and the commit, when the
// build recorded it) on podnet's own images.
func releaseLabels() map[string]string {
	l := map[string]string{VersionLabel: version.Version}
	if c := version.Commit(); c != "" {
		l["org.opencontainers.image.revision"] = c
	}
	return l
}

// ControllerSpec is podnet-controller's image: non-root, no privilege.
func ControllerSpec(binDir, tag string) Spec {
	return BinarySpec(Ref(ControllerName, tag), filepath.Join(binDir, "podnet-controller"), ControllerBinary, NonRootUser)
}

// PauseSpec is the sandbox image from a pause binary built from ./pause.
func PauseSpec(binary string) Spec {
	return BinarySpec(PauseImage, binary, PauseBinary, NonRootUser)
}

// BusyboxSpec is the test workload image: the host's static busybox with a
// symlink in /bin for every applet it has, run as root with sh as the
// default command (Cmd, not Entrypoint, so that `ctr run img id ip link` and
// a pod's args run the command given, as with Docker Hub's busybox).
func BusyboxSpec(busybox string) (Spec, error) {
	applets, err := listApplets(busybox)
	if err != nil {
		return Spec{}, err
	}
	if err := validateApplets(busybox, applets); err != nil {
		return Spec{}, err
	}
	files := append(baseFiles(), File{Path: "/bin/busybox", Source: busybox, Mode: 0o755})
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		files = append(files, File{Path: "/bin/" + a, Link: "busybox"})
	}
	return Spec{
		Name:  BusyboxImage,
		Files: files,
		Cmd:   []string{"/bin/sh"},
		User:  RootUser,
		Env:   []string{"PATH=/bin"},
	}, nil
}

// listApplets asks busybox itself which applets it was built with.
func listApplets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list applets of %q: %w", busybox, err)
	}
	return strings.Fields(string(out)), nil
}

// validateApplets checks that every required applet is present and that
// every name is safe as a file name in /bin.
func validateApplets(busybox string, applets []string) error {
	var missing []string
	for _, r := range requiredApplets {
		if !slices.Contains(applets, r) {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("busybox %q lacks required applets %v", busybox, missing)
	}
	for _, a := range applets {
		if a == "." || a == ".." || strings.ContainsAny(a, "/\x00") {
			return fmt.Errorf("busybox %q lists applet %q, which is not a file name", busybox, a)
		}
	}
	return nil
}

// validateSpec rejects a spec that cannot become a sensible image before
// any file is read.
func validateSpec(s Spec) error {
	if s.Name == "" {
		return fmt.Errorf("image spec: name is empty")
	}
	if len(s.Entrypoint) == 0 && len(s.Cmd) == 0 {
		return fmt.Errorf("image %q: neither entrypoint nor cmd is set", s.Name)
	}
	seen := map[string]bool{}
	for i, f := range s.Files {
		kinds := 0
		for _, set := range []bool{f.Source != "", f.Data != nil, f.Link != "", f.Dir} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return fmt.Errorf("image %q: files[%d] %q: exactly one of source, data, link or dir must be set, got %d", s.Name, i, f.Path, kinds)
		}
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return fmt.Errorf("image %q: files[%d] path %q must be absolute and clean, and not /", s.Name, i, f.Path)
		}
		if f.Mode&^0o7777 != 0 {
			return fmt.Errorf("image %q: files[%d] %q: mode %o has bits beyond 07777", s.Name, i, f.Path, f.Mode)
		}
		if seen[f.Path] {
			return fmt.Errorf("image %q: files[%d] path %q appears twice", s.Name, i, f.Path)
		}
		seen[f.Path] = true
	}
	return nil
}

// validateSources reports a missing source with the image it was meant for, the
// usual mistake being `make image` before `make build`.
func validateSources(s Spec) error {
	for _, f := range s.Files {
		if f.Source == "" {
			continue
		}
		st, err := os.Stat(f.Source)
		if err != nil {
			return fmt.Errorf("image %q: source of %q: %w", s.Name, f.Path, err)
		}
		if !st.Mode().IsRegular() {
			return fmt.Errorf("image %q: source %q of %q is not a regular file", s.Name, f.Source, f.Path)
		}
	}
	return nil
}
