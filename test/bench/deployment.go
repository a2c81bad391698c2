package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// DeploymentEnv is the environment that Deployment name of the manifest
// file gives its first container, with a resourceFieldRef to
// limits.memory resolved the way the kubelet does (bytes), so that a bench
// runs the binary with the Deployment's GOMEMLIMIT and GOGC. GOGC and
// GOMEMLIMIT of the caller's own environment are cleared first, so only
// the Deployment's apply; a fieldRef (the pod's namespace, name) is left
// out: the bench passes what it stands for by flag.
func DeploymentEnv(file, name string) ([]string, error) {
	return workloadEnv(file, "Deployment", name)
}

// DaemonSetEnv is DeploymentEnv for DaemonSet name of the manifest file.
func DaemonSetEnv(file, name string) ([]string, error) {
	return workloadEnv(file, "DaemonSet", name)
}

// workloadEnv is DeploymentEnv for a workload of kind; a DaemonSet's pod
// template sits where a Deployment's does, so one decoding reads both.
func workloadEnv(file, kind, name string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var d appsv1.Deployment
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no %s %s in %s", kind, name, file)
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if d.Kind != kind || d.Name != name {
			continue
		}
		environ := []string{"GOGC=", "GOMEMLIMIT="}
		c := d.Spec.Template.Spec.Containers[0]
		for _, e := range c.Env {
			switch {
			case e.ValueFrom == nil:
				environ = append(environ, e.Name+"="+e.Value)
			case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
				environ = append(environ, fmt.Sprintf("%s=%d", e.Name, c.Resources.Limits.Memory().Value()))
			case e.ValueFrom.FieldRef != nil:
			default:
				return nil, fmt.Errorf("%s %s, env %s: cannot resolve %+v", kind, name, e.Name, e.ValueFrom)
			}
		}
		return environ, nil
	}
}
