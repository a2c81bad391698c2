package main

// draKubeletPlugin adds, under dra.enabled, what
// deploy/components/dra-kubelet-plugin adds to the agent: the flag and the
// kubelet's two plugin folders, mounted at the same paths as on the node
// (the kubelet dials the socket path the plugin registers).
func (c *chart) draKubeletPlugin(pod, ctr map[string]any) error {
	for path, v := range map[string]any{"dra.enabled": false, "dra.kubeletDir": "/var/lib/kubelet", "dra.hostDir": "", "dra.mountDir": ""} {
		if err := c.setValue(path, v); err != nil {
			return err
		}
	}
	const on = "{{- if $.Values.dra.enabled }}\n"
	// dra.hostDir: one node folder that holds every kubelet's, as on the
	// local cluster, where the kubelet's folder names the node and a
	// volume cannot.
	const own = "{{- if $.Values.dra.hostDir }}\n"
	const dir = "{{ $.Values.dra.kubeletDir }}"
	const mountDir = "{{ $.Values.dra.mountDir | default $.Values.dra.hostDir }}"
	args, _ := ctr["args"].([]any)
	ctr["args"] = append(args, c.tok.add(lines, on+"%[1]s- --dra-kubelet-dir="+dir+"\n{{- end }}"))
	mounts, _ := ctr["volumeMounts"].([]any)
	ctr["volumeMounts"] = append(mounts, c.tok.add(lines, on+own+
		"%[1]s- {name: kubelet-dra, mountPath: "+mountDir+"}\n{{- else }}\n"+
		"%[1]s- {name: kubelet-plugins, mountPath: "+dir+"/plugins}\n"+
		"%[1]s- {name: kubelet-plugins-registry, mountPath: "+dir+"/plugins_registry}\n{{- end }}\n{{- end }}"))
	vols, _ := pod["volumes"].([]any)
	pod["volumes"] = append(vols, c.tok.add(lines, on+own+
		"%[1]s- {name: kubelet-dra, hostPath: {path: {{ $.Values.dra.hostDir }}}}\n{{- else }}\n"+
		"%[1]s- {name: kubelet-plugins, hostPath: {path: "+dir+"/plugins, type: DirectoryOrCreate}}\n"+
		"%[1]s- {name: kubelet-plugins-registry, hostPath: {path: "+dir+"/plugins_registry, type: DirectoryOrCreate}}\n{{- end }}\n{{- end }}"))
	return nil
}
