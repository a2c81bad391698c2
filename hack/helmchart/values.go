package main

import (
	"fmt"
	"path"
	"strings"

	"podnet.io/podnet/webhook"
)

// component is a workload of deploy/ and the values key that sets it.
type component struct {
	kind, name, container, key string
}

var components = []component{
	{"Deployment", "podnet-webhook", "webhook", "webhook"},
	{"DaemonSet", "podnet-agent", "agent", "agent"},
	{"Deployment", "podnet-controller", "controller", "controller"},
}

// imageExpr is the template of a component's image (templates/_helpers.tpl).
func imageExpr(key string) string {
	return fmt.Sprintf(`include "podnet.image" (dict "root" $ "component" %q)`, key)
}

// parameterize replaces, in one object, every field an admin sets with a
// token for its template expression, and records what deploy/ has there
// as the default.
func (c *chart) parameterize(o object) error {
	meta := mapAt(o, "metadata")
	labels := mapAt(meta, "labels")
	labels[c.tok.add(lines, `{{- include "podnet.labels" $ | nindent %[2]d }}`)] = "x"
	switch kindOf(o) {
	case "CustomResourceDefinition":
		ann := mapAt(meta, "annotations")
		ann[c.tok.add(lines, "{{- if $.Values.crds.keep }}\n%[1]shelm.sh/resource-policy: keep\n{{- end }}")] = "x"
	case "Deployment", "DaemonSet":
		for _, comp := range components {
			if comp.kind == kindOf(o) && comp.name == nameOf(o) {
				return c.workload(o, comp)
			}
		}
	}
	return nil
}

// workload parameterizes one component's pod template.
func (c *chart) workload(o object, comp component) error {
	k := comp.key
	spec := mapAt(o, "spec")
	if _, ok := spec["replicas"]; ok {
		if err := c.replace(spec, "replicas", inline, k+".replicas"); err != nil {
			return err
		}
	}
	pod := mapAt(mapAt(spec, "template"), "spec")
	for _, f := range []string{"nodeSelector", "tolerations", "affinity"} {
		if _, ok := pod[f]; !ok {
			pod[f] = map[string]any{}
			if f == "tolerations" {
				pod[f] = []any{}
			}
		}
		if err := c.replace(pod, f, optBlock, k+"."+f); err != nil {
			return err
		}
	}
	ctr, err := named(pod, "containers", comp.container)
	if err != nil {
		return err
	}
	if err := c.image(ctr, k); err != nil {
		return err
	}
	if err := c.replace(ctr, "resources", block, k+".resources"); err != nil {
		return err
	}
	switch k {
	case "webhook":
		err = c.webhook(pod, ctr)
	case "agent":
		err = c.agent(pod, ctr)
	case "controller":
		err = c.arg(ctr, "--gc-grace=", "controller.gcGrace")
	}
	if err != nil {
		return err
	}
	// Flags an admin adds (e.g. --zap-log-level=debug) come last, so that
	// a repeated flag wins over the chart's.
	args, _ := ctr["args"].([]any)
	ctr["args"] = append(args, c.tok.add(lines, "{{- range $.Values."+k+".extraArgs }}\n%[1]s- {{ . | quote }}\n{{- end }}"))
	if err := c.setValue(k+".extraArgs", []any{}); err != nil {
		return err
	}
	return nil
}

func (c *chart) webhook(pod, ctr map[string]any) error {
	// The wait container's image is the webhook's flag; it is passed only
	// when the images differ from the webhook's default, so the default
	// install stays exactly deploy/'s.
	repo, tag, registry, err := splitImage(webhook.DefaultWaitImage)
	if err != nil {
		return err
	}
	if err := c.setValue("wait.image", map[string]any{"repository": repo, "tag": ""}); err != nil {
		return err
	}
	if r, _ := c.values["images"].(map[string]any); r["registry"] != registry || r["tag"] != tag {
		return fmt.Errorf("the webhook's default wait image %q is not in the images' registry and tag %v", webhook.DefaultWaitImage, r)
	}
	if err := c.arg(ctr, "--nri-tolerate-annotations=", "nri.tolerateMissingPluginsAnnotations"); err != nil {
		return err
	}
	args, _ := ctr["args"].([]any)
	ctr["args"] = append(args, c.tok.add(lines, "{{- $wait := "+imageExpr("wait")+" }}\n"+
		"{{- if ne $wait "+fmt.Sprintf("%q", webhook.DefaultWaitImage)+" }}\n%[1]s- --wait-image={{ $wait }}\n{{- end }}"))
	return c.secret(pod, "signing", "approvalKeys.privateKeySecret")
}

func (c *chart) agent(pod, ctr map[string]any) error {
	if err := c.criSocket(pod, ctr); err != nil {
		return err
	}
	if err := c.secret(pod, "approval", "approvalKeys.publicKeySecret"); err != nil {
		return err
	}
	if err := c.sandboxSetup(pod, ctr); err != nil {
		return err
	}
	if err := c.draKubeletPlugin(pod, ctr); err != nil {
		return err
	}
	if err := c.nriSocket(pod, ctr); err != nil {
		return err
	}
	return c.nriHook(pod, ctr)
}

// nriHook parameterizes where the agent installs its wait hook: the path
// is a value, and its folder is mounted at the same path on the node and
// in the agent, since the runtime runs the hook from the path the agent
// names.
func (c *chart) nriHook(pod, ctr map[string]any) error {
	v, err := named(pod, "volumes", "nri-hook")
	if err != nil {
		return err
	}
	mount, err := named(ctr, "volumeMounts", "nri-hook")
	if err != nil {
		return err
	}
	if err := c.arg(ctr, "--nri-hook=", "nri.hook"); err != nil {
		return err
	}
	mapAt(v, "hostPath")["path"] = c.tok.add(inline, "dir $.Values.nri.hook")
	mount["mountPath"] = c.tok.add(inline, "dir $.Values.nri.hook")
	return nil
}

// criSocket parameterizes the runtime's socket: the endpoint is a value,
// and the folder the agent mounts (at the same path on the node and in the
// agent) follows it, unless agent.cri.hostDir and agent.cri.mountDir name
// other folders; so CRI-O needs only its endpoint.
func (c *chart) criSocket(pod, ctr map[string]any) error {
	v, err := named(pod, "volumes", "cri")
	if err != nil {
		return err
	}
	mount, err := named(ctr, "volumeMounts", "cri")
	if err != nil {
		return err
	}
	endpoint, _ := argOf(ctr, "--cri-endpoint=")
	socket := strings.TrimPrefix(endpoint, "unix://")
	if dir := path.Dir(socket); mapAt(v, "hostPath")["path"] != dir || mount["mountPath"] != dir {
		return fmt.Errorf("the agent mounts %v at %v; the chart expects the folder of its --cri-endpoint %q at the same path", mapAt(v, "hostPath")["path"], mount["mountPath"], endpoint)
	}
	if err := c.arg(ctr, "--cri-endpoint=", "agent.cri.endpoint"); err != nil {
		return err
	}
	folder := `dir (trimPrefix "unix://" $.Values.agent.cri.endpoint)`
	mapAt(v, "hostPath")["path"] = c.tok.add(inline, "$.Values.agent.cri.hostDir | default ("+folder+")")
	mount["mountPath"] = c.tok.add(inline, "$.Values.agent.cri.mountDir | default ("+folder+")")
	return nil
}

// nriSocket parameterizes the agent's NRI socket (every install's): the
// socket is a value, and the folder the agent mounts (at the same path on
// the node and in the agent) follows it, unless nri.hostDir and
// nri.mountDir name other folders (a node folder per node, as on the
// local cluster, where the socket's path holds $(NODE_NAME), which a
// mount cannot).
func (c *chart) nriSocket(pod, ctr map[string]any) error {
	v, err := named(pod, "volumes", "nri")
	if err != nil {
		return err
	}
	if err := c.arg(ctr, "--nri-socket=", "nri.socket"); err != nil {
		return err
	}
	mount, err := named(ctr, "volumeMounts", "nri")
	if err != nil {
		return err
	}
	mapAt(v, "hostPath")["path"] = c.tok.add(inline, "$.Values.nri.hostDir | default (dir $.Values.nri.socket)")
	mount["mountPath"] = c.tok.add(inline, "$.Values.nri.mountDir | default (dir $.Values.nri.socket)")
	return nil
}

// sandboxSetup parameterizes what deploy/components/attach-at-sandbox-setup
// adds to the agent, when it is there.
func (c *chart) sandboxSetup(pod, ctr map[string]any) error {
	if _, err := named(pod, "initContainers", "install-cni"); err != nil {
		return nil
	}
	install, _ := named(pod, "initContainers", "install-cni")
	if err := c.image(install, "agent"); err != nil {
		return err
	}
	if err := c.arg(ctr, "--cni-socket=", "attachAtSandboxSetup.socket"); err != nil {
		return err
	}
	for vol, key := range map[string]string{"cni-bin": "cniBinDir", "cni-socket": "socketDir"} {
		v, err := named(pod, "volumes", vol)
		if err != nil {
			return err
		}
		if err := c.replace(mapAt(v, "hostPath"), "path", inline, "attachAtSandboxSetup."+key); err != nil {
			return err
		}
	}
	return nil
}

// image makes a container's image the images values and its pull policy
// images.pullPolicy (deploy/ sets none).
func (c *chart) image(ctr map[string]any, key string) error {
	ref, _ := ctr["image"].(string)
	repo, tag, registry, err := splitImage(ref)
	if err != nil {
		return err
	}
	for path, v := range map[string]any{"images.registry": registry, "images.tag": tag,
		key + ".image": map[string]any{"repository": repo, "tag": ""}} {
		if err := c.setValue(path, v); err != nil {
			return err
		}
	}
	ctr["image"] = c.tok.add(inline, imageExpr(key))
	if _, ok := ctr["imagePullPolicy"]; !ok {
		ctr["imagePullPolicy"] = ""
	}
	return c.replace(ctr, "imagePullPolicy", optScalar, "images.pullPolicy")
}

// splitImage splits registry/repository:tag at the last slash.
func splitImage(ref string) (repo, tag, registry string, err error) {
	slash := strings.LastIndex(ref, "/")
	colon := strings.LastIndex(ref, ":")
	if colon < slash || colon < 0 {
		return "", "", "", fmt.Errorf("image %q has no tag", ref)
	}
	if slash >= 0 {
		registry = ref[:slash]
	}
	return ref[slash+1 : colon], ref[colon+1:], registry, nil
}

// replace puts a token for values path in m[key] and records m[key] as
// its default.
func (c *chart) replace(m map[string]any, key string, kind tokenKind, path string) error {
	v, ok := m[key]
	if !ok {
		return fmt.Errorf("no %q for value %s", key, path)
	}
	if err := c.setValue(path, v); err != nil {
		return err
	}
	m[key] = c.tok.add(kind, "$.Values."+path)
	return nil
}

// argOf is the value of a container's flag prefix.
func argOf(ctr map[string]any, prefix string) (string, bool) {
	args, _ := ctr["args"].([]any)
	for _, a := range args {
		if s, ok := a.(string); ok && strings.HasPrefix(s, prefix) {
			return strings.TrimPrefix(s, prefix), true
		}
	}
	return "", false
}

// arg makes the value of the flag prefix a value.
func (c *chart) arg(ctr map[string]any, prefix, path string) error {
	args, _ := ctr["args"].([]any)
	for i, a := range args {
		if s, ok := a.(string); ok && strings.HasPrefix(s, prefix) {
			if err := c.setValue(path, strings.TrimPrefix(s, prefix)); err != nil {
				return err
			}
			args[i] = prefix + c.tok.add(inline, "$.Values."+path)
			return nil
		}
	}
	return fmt.Errorf("container %v has no flag %s", ctr["name"], prefix)
}

func (c *chart) secret(pod map[string]any, volume, path string) error {
	v, err := named(pod, "volumes", volume)
	if err != nil {
		return err
	}
	return c.replace(mapAt(v, "secret"), "secretName", inline, path)
}

// mapAt returns m[key] as a map, creating it when absent.
func mapAt(m map[string]any, key string) map[string]any {
	v, ok := m[key].(map[string]any)
	if !ok {
		v = map[string]any{}
		m[key] = v
	}
	return v
}

// named finds the element of the list m[field] whose name is name.
func named(m map[string]any, field, name string) (map[string]any, error) {
	list, _ := m[field].([]any)
	for _, e := range list {
		if em, ok := e.(map[string]any); ok && em["name"] == name {
			return em, nil
		}
	}
	return nil, fmt.Errorf("no %s %q", field, name)
}
