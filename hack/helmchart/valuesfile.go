package main

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"podnet.io/podnet/api/v1alpha1"
)

// chartValues are the values that are the chart's own (deploy/ has no
// field for them); every other default comes from deploy/.
var chartValues = map[string]any{
	"holdPods":                     string(v1alpha1.HoldAuto),
	"approvalKeys.existingSecrets": false,
	"agent.cri.hostDir":            "",
	"agent.cri.mountDir":           "",
	"nri.hostDir":                  "",
	"nri.mountDir":                 "",
	"approvalKeys.privateKey":      "",
	"approvalKeys.publicKey":       "",
	"namespace.create":             false,
	"crds.install":                 true,
	"crds.keep":                    true,
	"monitoring.serviceMonitor":    map[string]any{"enabled": false, "interval": "30s", "labels": map[string]any{}},
	"monitoring.prometheusRule":    map[string]any{"enabled": false, "labels": map[string]any{}},
	"monitoring.dashboard":         map[string]any{"enabled": false, "labels": map[string]any{"grafana_dashboard": "1"}},
	"uninstall.cleanNodes":         true,
	"uninstall.timeout":            "4m",
}

// valueDocs says what each value is for; values.yaml is written in this
// order, and a value without a line here fails the generator, so that
// every value an admin sees is explained.
var valueDocs = []struct{ path, doc string }{
	{"images", "Images of podnet's components: <registry>/<repository>:<tag>."},
	{"images.registry", "Registry and path in front of every component's repository (make push REGISTRY=...)."},
	{"images.tag", "Tag of every image unless a component sets its own image.tag."},
	{"images.pullPolicy", "imagePullPolicy of podnet's containers; empty leaves Kubernetes' default."},
	{"holdPods", "How a pod is held until its networks exist: auto (nri while every node's agent reports that its\n" +
		"runtime's NRI default validator is on, waitInitContainer otherwise), waitInitContainer (the webhook\n" +
		"injects the podnet-wait init container; works on every runtime), attachAtSandboxSetup (podnet's\n" +
		"chained CNI plugin holds the sandbox; every node's conflist must chain podnet-cni first) or nri\n" +
		"(the agent's NRI plugin refuses a pod's containers until its networks exist; needs NRI in every\n" +
		"node's runtime, and its default validator on to hold pods while the agent is down)."},
	{"attachAtSandboxSetup", "Where the agent installs and serves the chained CNI plugin (holdPods: attachAtSandboxSetup)."},
	{"attachAtSandboxSetup.cniBinDir", "The node's CNI bin folder, where the agent's install-cni init container copies podnet-cni."},
	{"attachAtSandboxSetup.socketDir", "Node folder of the agent's plugin socket, mounted at /run/podnet in the agent."},
	{"attachAtSandboxSetup.socket", "The plugin socket as the agent sees it."},
	{"nri", "The runtime's NRI socket the agent's plugin connects to (every holdPods: auto probes the runtime through it)."},
	{"nri.socket", "Its path in the agent; the agent mounts its folder on the node at the same path, unless:"},
	{"nri.hostDir", "The node folder to mount instead (empty: the folder of nri.socket)."},
	{"nri.mountDir", "Where in the agent to mount it (empty: the folder of nri.socket)."},
	{"nri.tolerateMissingPluginsAnnotations", "The annotation keys (comma-separated) the nodes' NRI default validators read to let a pod run\n" +
		"without its required plugins (tolerate_missing_plugins_annotation), where an admin set one: the webhook\n" +
		"refuses them on podnet pods. Empty: none is set."},
	{"nri.hook", "Where on the node the agent installs podnet-wait, run by the runtime as an OCI createRuntime hook\n" +
		"that holds a container of a pod held with NRI until its networks exist (no kubelet retry); its\n" +
		"folder is mounted at the same path in the agent."},
	{"dra", "The agent's Dynamic Resource Allocation driver podnet.io (docs/install.md): a kubelet plugin publishing\n" +
		"each node's ResourceSlices for the profile networks with a dra block. Kubernetes 1.34 or later."},
	{"dra.enabled", "Serve it on every agent's node."},
	{"dra.kubeletDir", "The kubelet's root directory (--root-dir); its plugins and plugins_registry folders are\n" +
		"mounted at the same paths in the agent."},
	{"dra.hostDir", "A node folder holding every kubelet's plugin folders, mounted instead of them (empty: the two\n" +
		"folders of dra.kubeletDir), where dra.kubeletDir names the node, as on the local cluster."},
	{"dra.mountDir", "Where in the agent to mount dra.hostDir (empty: the same path)."},
	{"approvalKeys", "The Ed25519 key pair that signs approvals: the private key only for the webhook, the public\n" +
		"key only for the agents."},
	{"approvalKeys.existingSecrets", "true: the two Secrets below exist already (hack/deploy.sh, your secret manager) and the\n" +
		"chart makes none. false: the chart makes them from privateKey/publicKey, or generates a\n" +
		"pair on install and keeps it on upgrade."},
	{"approvalKeys.privateKeySecret", "Secret holding approval.key (PEM PKCS#8), mounted by the webhook."},
	{"approvalKeys.publicKeySecret", "Secret holding approval.pub (PEM PKIX, one or more keys), mounted by the agents."},
	{"approvalKeys.privateKey", "PEM private key to use instead of a generated one (with publicKey; --set-file)."},
	{"approvalKeys.publicKey", "PEM public key(s) matching privateKey."},
	{"namespace", "The release namespace."},
	{"namespace.create", "Make the namespace (labelled to admit the agent's privileged pods) as part of the release;\n" +
		"leave false with `helm install --create-namespace`."},
	{"crds", "podnet's CustomResourceDefinitions."},
	{"crds.install", "Install and upgrade the CRDs with the release."},
	{"crds.keep", "Keep the CRDs, and so every NetworkProfile and IPClaim, on helm uninstall."},
	{"webhook", "podnet-webhook: judges requests, signs approvals; holds the private key."},
	{"webhook.image", "Repository and (optional) tag of this component's image."},
	{"webhook.replicas", ""},
	{"webhook.resources", ""},
	{"webhook.nodeSelector", "Where the webhook runs is who holds the signing key: control-plane nodes by default."},
	{"webhook.tolerations", ""},
	{"webhook.affinity", ""},
	{"webhook.extraArgs", "Flags added after the chart's (podnet-webhook --help)."},
	{"agent", "podnet-agent (DaemonSet): applies approvals on its node; holds the public key."},
	{"agent.image", ""},
	{"agent.resources", ""},
	{"agent.nodeSelector", "Nodes that run the agent (pods asking for networks elsewhere never become Ready)."},
	{"agent.tolerations", ""},
	{"agent.affinity", ""},
	{"agent.extraArgs", "Flags added after the chart's, e.g. --zap-log-level=debug (podnet-agent --help)."},
	{"agent.cri", "The container runtime's socket."},
	{"agent.cri.endpoint", "CRI endpoint: containerd unix:///run/containerd/containerd.sock, CRI-O unix:///var/run/crio/crio.sock.\n" +
		"The agent mounts its folder on the node at the same path, unless:"},
	{"agent.cri.hostDir", "The node folder to mount instead (empty: the folder of agent.cri.endpoint)."},
	{"agent.cri.mountDir", "Where in the agent to mount it (empty: the folder of agent.cri.endpoint)."},
	{"controller", "podnet-controller: IPClaim garbage collection and NetworkProfile status, leader-elected."},
	{"controller.image", ""},
	{"controller.replicas", ""},
	{"controller.resources", ""},
	{"controller.nodeSelector", "Where the controller runs is who holds its token, which may delete any IPClaim."},
	{"controller.tolerations", ""},
	{"controller.affinity", ""},
	{"controller.gcGrace", "How long a claim's pod must be gone before the claim is deleted."},
	{"controller.extraArgs", "Flags added after the chart's (podnet-controller --help)."},
	{"wait", "podnet-wait, the init container the webhook injects (holdPods: waitInitContainer)."},
	{"wait.image", ""},
	{"uninstall", "What helm uninstall does before it deletes podnet."},
	{"uninstall.cleanNodes", "Run podnet-controller uninstall as a pre-delete hook: every agent detaches podnet's networks\n" +
		"from the pods of its node (they keep running on their primary network) and removes podnet's\n" +
		"links, nftables tables and socket; the hook waits for every node (docs/install.md#uninstall)."},
	{"uninstall.timeout", "How long the hook waits for every node's agent; on timeout it names the nodes, their agent\n" +
		"pods' state and what to do, and the uninstall stops before deleting anything. Keep it below\n" +
		"helm uninstall's own --timeout (5m by default), or Helm gives up first and says none of it."},
	{"monitoring", "What Prometheus Operator and Grafana users expect; all off by default."},
	{"monitoring.serviceMonitor", "Metrics Services and a ServiceMonitor (monitoring.coreos.com/v1) for the webhook, agents\n" +
		"and controller; labels are added to the ServiceMonitor for your Prometheus' selector."},
	{"monitoring.prometheusRule", "PrometheusRule alerts: failed attaches, exhausted pools, a webhook that refuses."},
	{"monitoring.dashboard", "A ConfigMap holding a Grafana dashboard (attach latency, admission decisions, pool usage);\n" +
		"labels let Grafana's sidecar find it."},
}

// valuesFile writes values.yaml: every value with its comment and the
// default deploy/ (or the chart) has.
func (c *chart) valuesFile() ([]byte, error) {
	for path, v := range chartValues {
		if err := c.setValue(path, v); err != nil {
			return nil, err
		}
	}
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("# Defaults are what deploy/ installs (kubectl apply -k deploy/).\n")
	written := map[string]bool{}
	for _, d := range valueDocs {
		v, parent, ok := c.lookup(d.path)
		if !ok {
			return nil, fmt.Errorf("values.yaml documents %s, which no template uses", d.path)
		}
		if parent != "" && !written[parent] {
			return nil, fmt.Errorf("values.yaml: %s comes before its parent %s", d.path, parent)
		}
		written[d.path] = true
		depth := strings.Count(d.path, ".")
		ind := strings.Repeat("  ", depth)
		if d.doc != "" {
			if depth == 0 {
				b.WriteString("\n")
			}
			for _, l := range strings.Split(d.doc, "\n") {
				b.WriteString(ind + "# " + l + "\n")
			}
		}
		key := d.path[strings.LastIndex(d.path, ".")+1:]
		if m, ok := v.(map[string]any); ok && c.documentsChildren(d.path) {
			_ = m
			b.WriteString(ind + key + ":\n")
			continue
		}
		text, err := yamlValue(v, ind+"  ")
		if err != nil {
			return nil, fmt.Errorf("value %s: %w", d.path, err)
		}
		b.WriteString(ind + key + ":" + text + "\n")
	}
	if err := c.allDocumented(c.values, "", written); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// lookup finds a value by dotted path.
func (c *chart) lookup(path string) (any, string, bool) {
	keys := strings.Split(path, ".")
	var v any = c.values
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, "", false
		}
		if v, ok = m[k]; !ok {
			return nil, "", false
		}
	}
	return v, strings.Join(keys[:len(keys)-1], "."), true
}

func (c *chart) documentsChildren(path string) bool {
	for _, d := range valueDocs {
		if strings.HasPrefix(d.path, path+".") {
			return true
		}
	}
	return false
}

// allDocumented fails on a value that valueDocs does not write.
func (c *chart) allDocumented(m map[string]any, prefix string, written map[string]bool) error {
	for _, k := range sortedKeys(m) {
		path := prefix + k
		if written[path] {
			continue
		}
		sub, ok := m[k].(map[string]any)
		if !ok || !c.documentsChildren(path) {
			return fmt.Errorf("value %s has no line in valueDocs", path)
		}
		if err := c.allDocumented(sub, path+".", written); err != nil {
			return err
		}
	}
	return nil
}

// yamlValue is v after "key:": inline for scalars and empty collections,
// an indented block otherwise.
func yamlValue(v any, ind string) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", err
	}
	text := strings.TrimRight(string(data), "\n")
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			return " {}", nil
		}
	case []any:
		if len(t) == 0 {
			return " []", nil
		}
	default:
		return " " + text, nil
	}
	return "\n" + ind + strings.ReplaceAll(text, "\n", "\n"+ind), nil
}
