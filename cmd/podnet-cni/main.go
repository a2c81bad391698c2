// Command podnet-cni is podnet's chained CNI plugin (package
// cniplugin). Install it as "podnet" in the node's CNI bin folder and
// list it last in the node's conflist:
//
//	{"type": "podnet", "socket": "/run/podnet/cni.sock",
//	 "capabilities": {"io.kubernetes.cri.pod-annotations": true}}
package main

import (
	"fmt"
	"os"

	"github.com/containernetworking/cni/pkg/skel"

	"podnet.io/podnet/cniplugin"
	"podnet.io/podnet/cnisocket"
	"podnet.io/podnet/pkg/version"
)

func main() {
	// skel answers only CNI_COMMAND; a person asking gets the release.
	if version.Requested(os.Args[1:]) {
		fmt.Println(version.String("podnet-cni"))
		return
	}
	p := cniplugin.Plugin{Call: cnisocket.Call, Out: os.Stdout}
	skel.PluginMainFuncs(p.Funcs(), cniplugin.Versions, "podnet: attaches a pod's podnet networks during sandbox setup")
}
