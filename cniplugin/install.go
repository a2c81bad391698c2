package cniplugin

import "podnet.io/podnet/pkg/nodefile"

// Type is the plugin's "type" in a conflist, hence its file name in the
// node's CNI bin folder.
const Type = "podnet"

// Install copies the plugin binary src into the CNI bin folder dir as
// Type (nodefile.Install: a runtime running the plugin meanwhile sees the
// old binary or the new one, never half of one).
func Install(src, dir string) error { return nodefile.Install(src, dir, Type) }
