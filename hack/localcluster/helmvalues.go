package localcluster

import (
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// HelmValuesFile is the file, in a cluster's Dir, holding the values that
// install podnet's chart on that cluster (helm install -f).
const HelmValuesFile = "helm-values.yaml"

// HelmValues are the chart's values for a local cluster in dir, what
// hack/deploy.sh's generated overlay says for kustomize: images imported,
// never pulled; each node's runtime socket, NRI socket and wait hook under
// the cluster's folder (never the machine's /run/containerd, /var/run/nri
// or /opt/podnet/bin: the nodes share the machine's mount namespace); a
// short claim grace; the DRA kubelet plugin; and, where the nodes chain podnet's CNI plugin,
// attach at sandbox setup with the cluster's CNI bin folder and sockets;
// and the annotation the nodes' NRI validator reads to tolerate a missing
// plugin, when it has one (tolerate, for the webhook to refuse).
func HelmValues(dir string, attachAtSandboxSetup bool, tolerate string) ([]byte, error) {
	v := map[string]any{
		"images":     map[string]any{"pullPolicy": "Never"},
		"controller": map[string]any{"gcGrace": "5s"},
		"agent": map[string]any{"cri": map[string]any{
			"endpoint": "unix:///run/containerd/$(NODE_NAME)/" + NodeCRISocket,
			"hostDir":  dir,
			"mountDir": "/run/containerd",
		}},
		"nri": map[string]any{
			"socket":                            "/run/podnet-nodes/$(NODE_NAME)/" + NodeNRISocket,
			"hostDir":                           dir,
			"mountDir":                          "/run/podnet-nodes",
			"hook":                              filepath.Join(dir, "podnet-hook", "podnet-wait"),
			"tolerateMissingPluginsAnnotations": tolerate,
		},
	}
	// The agents serve the DRA kubelet plugin, as make demo deploys them:
	// each node's kubelet folder is under the cluster's.
	v["dra"] = map[string]any{
		"enabled":    true,
		"kubeletDir": filepath.Join(dir, "$(NODE_NAME)", NodeKubeletDir),
		"hostDir":    dir,
	}
	if attachAtSandboxSetup {
		v["holdPods"] = "attachAtSandboxSetup"
		v["attachAtSandboxSetup"] = map[string]any{
			"cniBinDir": filepath.Join(dir, CNIBinDirName),
			"socketDir": dir,
			"socket":    "/run/podnet/$(NODE_NAME)/" + NodeCNISocket,
		}
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte("# podnet's Helm chart on the local cluster in "+dir+" (helm install -f);\n# written at the cluster's bring-up.\n"), b...), nil
}
