package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"strings"
	"testing"

	"podnet.io/podnet/pkg/certs"
)

// workloads are the pod templates of deploy/, by id.
var workloads = map[string]string{
	"Deployment/podnet-system/podnet-webhook":    "webhook",
	"DaemonSet/podnet-system/podnet-agent":       "agent",
	"Deployment/podnet-system/podnet-controller": "controller",
}

// TestChartValuesChangeWhatTheyName renders the chart with the default
// values and with a set an admin would write, applies to the default
// objects by hand exactly what each value means, and requires the result
// to be the chart's: a value that changes anything else, or fails to
// change what it names, fails.
func TestChartValuesChangeWhatTheyName(t *testing.T) {
	base := render(t, Namespace)
	got := render(t, Namespace,
		"images.registry=registry.example.com/net/podnet",
		"images.tag=v9.9.9",
		"images.pullPolicy=Always",
		"controller.image.tag=v9.9.8",
		"agent.nodeSelector.podnet\\.io/agent=yes",
		"agent.tolerations[0].key=dedicated",
		"agent.tolerations[0].operator=Equal",
		"agent.tolerations[0].value=net",
		"agent.tolerations[0].effect=NoSchedule",
		"agent.resources.requests.cpu=100m",
		"agent.resources.limits.memory=1Gi",
		"agent.extraArgs[0]=--zap-log-level=debug",
		"webhook.replicas=3",
	)
	want := base
	for id, key := range workloads {
		pod := podSpecOf(t, want[id])
		tag := "v9.9.9"
		if key == "controller" {
			tag = "v9.9.8"
		}
		ctr := containerOf(t, pod, key)
		ctr["image"] = "registry.example.com/net/podnet/" + key + ":" + tag
		ctr["imagePullPolicy"] = "Always"
		switch key {
		case "agent":
			pod["nodeSelector"] = map[string]any{"podnet.io/agent": "yes"}
			pod["tolerations"] = []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "net", "effect": "NoSchedule"}}
			ctr["resources"] = map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "48Mi"}, "limits": map[string]any{"memory": "1Gi"}}
			ctr["args"] = append(ctr["args"].([]any), "--zap-log-level=debug")
		case "webhook":
			ctr["args"] = append(ctr["args"].([]any), "--wait-image=registry.example.com/net/podnet/wait:v9.9.9")
			want[id]["spec"].(map[string]any)["replicas"] = float64(3)
		}
	}
	// The uninstall hook runs the controller's image.
	hook := containerOf(t, podSpecOf(t, want["Job/podnet-system/podnet-uninstall"]), "uninstall")
	hook["image"] = "registry.example.com/net/podnet/controller:v9.9.8"
	hook["imagePullPolicy"] = "Always"
	// The release's generated keys differ from render to render.
	for _, id := range keySecrets {
		delete(got, id)
		delete(want, id)
	}
	compare(t, "admin values", got, want)
}

// TestChartHoldPodsAtSandboxSetupFollowsValues: in attach at sandbox
// setup the plugin's folders and socket are values, and the webhook stops
// injecting the wait container.
func TestChartHoldPodsAtSandboxSetupFollowsValues(t *testing.T) {
	got := render(t, Namespace, "holdPods=attachAtSandboxSetup",
		"attachAtSandboxSetup.cniBinDir=/usr/libexec/cni", "attachAtSandboxSetup.socketDir=/var/lib/podnet",
		"attachAtSandboxSetup.socket=/run/podnet/$(NODE_NAME)/cni.sock")
	agent := podSpecOf(t, got["DaemonSet/podnet-system/podnet-agent"])
	paths := map[string]string{}
	for _, v := range agent["volumes"].([]any) {
		v := v.(map[string]any)
		if hp, ok := v["hostPath"].(map[string]any); ok {
			paths[v["name"].(string)] = hp["path"].(string)
		}
	}
	if paths["cni-bin"] != "/usr/libexec/cni" || paths["cni-socket"] != "/var/lib/podnet" {
		t.Errorf("agent host paths %v, want cni-bin /usr/libexec/cni and cni-socket /var/lib/podnet", paths)
	}
	if args := argsOf(t, agent, "agent"); !strings.Contains(args, "--cni-socket=/run/podnet/$(NODE_NAME)/cni.sock") {
		t.Errorf("agent args %s lack the socket value", args)
	}
	if args := argsOf(t, podSpecOf(t, got["Deployment/podnet-system/podnet-webhook"]), "webhook"); !strings.Contains(args, "--hold-pods=attachAtSandboxSetup") {
		t.Errorf("webhook args %s: the webhook still injects the wait container", args)
	}
	if args := argsOf(t, podSpecOf(t, render(t, Namespace)["Deployment/podnet-system/podnet-webhook"]), "webhook"); strings.Contains(args, "--hold-pods") {
		t.Errorf("default webhook args %s choose a hold mode", args)
	}
}

// TestChartRefusesBadValues: values the templates cannot honour fail the
// render with a message naming the value.
func TestChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"holdPods=sidecar"}, `holdPods: "sidecar" is not a mode; use one of waitInitContainer, attachAtSandboxSetup, nri`},
		{[]string{"approvalKeys.privateKey=x"}, "approvalKeys.privateKey and approvalKeys.publicKey"},
		{[]string{"approvalKeys.existingSecrets=true", "approvalKeys.privateKey=x", "approvalKeys.publicKey=y"}, "approvalKeys.existingSecrets"},
		{[]string{"images.tag="}, "images.tag"},
		{[]string{"agent.image.repository="}, "agent.image.repository"},
	} {
		_, err := renderErr(t, Namespace, c.set...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %v: error %v, want one naming %q", c.set, err, c.want)
		}
	}
}

// TestChartGeneratesAKeyPair: the Secrets the chart generates hold an
// Ed25519 private key podnet-webhook loads and the public key of exactly
// that key, which podnet-agent loads; two installs get two pairs; an
// existing pair given as values is used as it is.
func TestChartGeneratesAKeyPair(t *testing.T) {
	priv1, pub1 := keysOf(t, render(t, Namespace))
	priv2, _ := keysOf(t, render(t, Namespace))
	msg := []byte("approval")
	if !ed25519.Verify(pub1, msg, ed25519.Sign(priv1, msg)) {
		t.Fatal("the generated public key does not verify the generated private key's signature")
	}
	if priv1.Equal(priv2) {
		t.Error("two renders generated the same private key")
	}

	dir := t.TempDir()
	if err := certs.GenerateKeyPair(dir+"/k", dir+"/p"); err != nil {
		t.Fatal(err)
	}
	out, err := renderArgs(t, Namespace, "--set-file", "approvalKeys.privateKey="+dir+"/k", "--set-file", "approvalKeys.publicKey="+dir+"/p")
	if err != nil {
		t.Fatal(err)
	}
	privG, pubG := keysOf(t, byID(t, out))
	want, err := certs.LoadSigner(dir + "/k")
	if err != nil {
		t.Fatal(err)
	}
	wantPriv, _ := want.PrivateKey()
	if !privG.Equal(wantPriv) || !pubG.Equal(wantPriv.Public()) {
		t.Error("the chart did not use the key pair given as approvalKeys.privateKey/publicKey")
	}
}

// keysOf parses the approval key Secrets of a render with podnet's own
// loaders and checks that the public key is the private key's.
func keysOf(t *testing.T, objs map[string]object) (ed25519.PrivateKey, ed25519.PublicKey) {
	t.Helper()
	data := func(id, key string) []byte {
		o, ok := objs[id]
		if !ok {
			t.Fatalf("no %s", id)
		}
		enc, _ := o["data"].(map[string]any)[key].(string)
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatalf("%s %s: %v", id, key, err)
		}
		return b
	}
	priv, err := certs.ParsePrivateKey(data(keySecrets[0], "approval.key"))
	if err != nil {
		t.Fatalf("the webhook cannot load the chart's private key: %v", err)
	}
	pubs, err := certs.ParsePublicKeys(data(keySecrets[1], "approval.pub"))
	if err != nil {
		t.Fatalf("the agent cannot load the chart's public key: %v", err)
	}
	if len(pubs) != 1 || !bytes.Equal(pubs[0], priv.Public().(ed25519.PublicKey)) {
		t.Fatalf("the public key Secret holds %d keys, not the private key's", len(pubs))
	}
	return priv, pubs[0]
}

func podSpecOf(t *testing.T, o object) map[string]any {
	t.Helper()
	spec, _ := o["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pod, ok := tmpl["spec"].(map[string]any)
	if !ok {
		t.Fatalf("%s has no pod template", id(o))
	}
	return pod
}

func containerOf(t *testing.T, pod map[string]any, name string) map[string]any {
	t.Helper()
	c, err := named(pod, "containers", name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func argsOf(t *testing.T, pod map[string]any, name string) string {
	t.Helper()
	var s []string
	for _, a := range containerOf(t, pod, name)["args"].([]any) {
		s = append(s, a.(string))
	}
	return strings.Join(s, " ")
}
