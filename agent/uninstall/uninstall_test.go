package uninstall

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

func TestHoldsPodnet(t *testing.T) {
	withAnn := func(k string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{k: "x"}}}
	}
	withCond := &corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: v1alpha1.NetworksReadyCondition}}}}
	hostNet := withAnn(v1alpha1.NetworksAnnotation)
	hostNet.Spec.HostNetwork = true
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"plain pod", &corev1.Pod{}, false},
		{"other annotations", withAnn("app"), false},
		{"asks", withAnn(v1alpha1.NetworksAnnotation), true},
		{"approved only", withAnn(v1alpha1.ApprovedAnnotation), true},
		{"status only (request since removed)", withAnn(v1alpha1.NetworkStatusAnnotation), true},
		{"condition only", withCond, true},
		{"node network", hostNet, false},
	} {
		if got := HoldsPodnet(tc.pod); got != tc.want {
			t.Errorf("%s: holdsPodnet = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRemoveFileTakesItsEmptyFolder: the socket goes, and its folder when
// nothing else is in it; a folder with other files stays; a file already
// gone is fine.
func TestRemoveFileTakesItsEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	alone := filepath.Join(dir, "podnet", "cni.sock")
	shared := filepath.Join(dir, "node", "cni.sock")
	for _, f := range []string{alone, shared, filepath.Join(dir, "node", "containerd.sock")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{alone, shared, alone} {
		if err := removeFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Dir(alone)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent's own folder stayed (%v)", err)
	}
	if _, err := os.Stat(shared); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket in a shared folder stayed (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node", "containerd.sock")); err != nil {
		t.Errorf("another file of a shared folder went: %v", err)
	}
}

// TestTrimDaemonSetKeepsWhatTheUninstallReads: the cached DaemonSet keeps
// its mark and UID (written on the Node when the node is done), and drops
// its pod template.
func TestTrimDaemonSetKeepsWhatTheUninstallReads(t *testing.T) {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "podnet-agent", Namespace: "podnet-system", UID: "u1", ResourceVersion: "7",
			Annotations: map[string]string{v1alpha1.UninstallAnnotation: "run-1"}, Labels: map[string]string{"app": "x"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "img"}}}}},
	}
	obj, err := trimDaemonSet(ds)
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*appsv1.DaemonSet)
	if got.Annotations[v1alpha1.UninstallAnnotation] != "run-1" || got.UID != "u1" || got.Name != ds.Name || got.Namespace != ds.Namespace || got.ResourceVersion != "7" {
		t.Fatalf("trimmed DaemonSet lost what the uninstall reads: %+v", got.ObjectMeta)
	}
	if len(got.Spec.Template.Spec.Containers) != 0 {
		t.Fatalf("trimmed DaemonSet kept its pod template")
	}
}
