package image

import (
	"fmt"
	"strings"
)

// Repository is where podnet's images live on a machine without a registry.
// "localhost" is a registry host for containerd's name parser, so the names
// stay as written instead of being expanded to docker.io.
const Repository = "localhost/podnet"

// DefaultTag is the tag of locally built images.
const DefaultTag = "dev"

// Short names of podnet's images; each is also the tarball's base name in
// _output/images.
const (
	PauseName   = "pause"
	BusyboxName = "busybox"
	WebhookName = "webhook"
	AgentName   = "agent"
	// WaitName is the image of the init container the webhook injects.
	WaitName = "wait"
	// ControllerName is podnet-controller's image.
	ControllerName = "controller"
)

// Full names of the locally built images, as `ctr images ls` shows them
// after import.
const (
	// PauseImage is containerd's sandbox image (sandbox_image in its CRI config).
	PauseImage = Repository + "/" + PauseName + ":" + DefaultTag
	// BusyboxImage is the test workload: busybox with its applets, root, sh.
	BusyboxImage = Repository + "/" + BusyboxName + ":" + DefaultTag
	WebhookImage = Repository + "/" + WebhookName + ":" + DefaultTag
	AgentImage   = Repository + "/" + AgentName + ":" + DefaultTag
	// WaitImage holds only podnet-wait, the injected init container.
	WaitImage = Repository + "/" + WaitName + ":" + DefaultTag
	// ControllerImage is podnet-controller.
	ControllerImage = Repository + "/" + ControllerName + ":" + DefaultTag
)

// Binaries inside the images. The wait binary's path matters beyond the
// image: the webhook injects it as the command of an init container.
const (
	BinDir        = "/usr/local/bin"
	WebhookBinary = BinDir + "/podnet-webhook"
	AgentBinary   = BinDir + "/podnet-agent"
	// WaitBinary is podnet-wait inside the wait image.
	WaitBinary = BinDir + "/podnet-wait"
	// ControllerBinary is podnet-controller inside its image.
	ControllerBinary = BinDir + "/podnet-controller"
	// CNIPluginBinary is the chained CNI plugin inside the agent image,
	// which the agent's install-cni init container copies onto the node.
	CNIPluginBinary = BinDir + "/podnet-cni"
	PauseBinary     = "/pause"
)

// Users images run as unless a manifest says otherwise.
const (
	NonRootUser = "65532:65532"
	RootUser    = "0:0"
)

// Ref names a podnet image with the given tag, e.g. Ref(AgentName, "v1").
func Ref(short, tag string) string {
	if tag == "" {
		tag = DefaultTag
	}
	return Repository + "/" + short + ":" + tag
}

// TarballName is the file name of an image's tarball in _output/images.
func TarballName(short string) string { return short + ".tar" }

// ShortName is the part of a podnet image name between Repository and the
// tag: ShortName(AgentImage) is "agent".
func ShortName(ref string) (string, error) {
	rest, ok := strings.CutPrefix(ref, Repository+"/")
	if !ok {
		return "", fmt.Errorf("image %q is not under %s", ref, Repository)
	}
	short, _, ok := strings.Cut(rest, ":")
	if !ok || short == "" || strings.ContainsAny(short, "/@") {
		return "", fmt.Errorf("image %q: want %s/<name>:<tag>", ref, Repository)
	}
	return short, nil
}
