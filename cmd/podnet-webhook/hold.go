package main

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"podnet.io/podnet/api/v1alpha1"
	"podnet.io/podnet/pkg/hold"
)

// holdMode reads --hold-pods and its deprecated alias
// --attach-at-sandbox-setup (true: attachAtSandboxSetup, false:
// waitInitContainer). Both given must mean the same mode: a deployment that
// sets one and a patch that sets the other would otherwise silently run a
// mode nobody chose.
func holdMode(f flags) (v1alpha1.HoldMode, error) {
	mode, err := hold.Parse("--hold-pods", f.holdPods)
	if err != nil {
		return "", err
	}
	if !f.set["attach-at-sandbox-setup"] {
		return mode, nil
	}
	alias := v1alpha1.HoldWaitInitContainer
	if f.attachAtSandboxSetup {
		alias = v1alpha1.HoldAttachAtSandboxSetup
	}
	if f.set["hold-pods"] && alias != mode {
		return "", fmt.Errorf("--attach-at-sandbox-setup=%v (deprecated, meaning --hold-pods=%s) contradicts --hold-pods=%s: give only --hold-pods", f.attachAtSandboxSetup, alias, mode)
	}
	return alias, nil
}

// nriTolerate reads --nri-tolerate-annotations: comma-separated annotation
// keys, each a qualified name as the API server accepts for an annotation.
func nriTolerate(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("--nri-tolerate-annotations %q: %q is not an annotation key: %s", s, k, strings.Join(errs, "; "))
		}
		out = append(out, k)
	}
	return out, nil
}
