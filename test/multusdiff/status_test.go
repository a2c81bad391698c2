package multusdiff

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	nadutils "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"podnet.io/podnet/api/v1alpha1"
)

// TestNetworkStatusDecodesAsNAD fills every field of the agent's status
// entry (so a field added later is covered too), and reads the annotation
// with the NAD client's GetNetworkStatus and with a strict decoder into the
// NAD type: every key podnet writes must be one the NAD type knows, with the
// same meaning, except podnet's own extensions, whose keys carry the
// "podnet.io/" prefix (a tunnel's endpoint and public key): the NAD client
// reads the entries with them as if they were not there.
func TestNetworkStatusDecodesAsNAD(t *testing.T) {
	full := v1alpha1.NetworkStatus{}
	fill(t, reflect.ValueOf(&full).Elem())
	entries := []v1alpha1.NetworkStatus{
		{Name: v1alpha1.DefaultClusterNetworkName, Interface: "eth0", IPs: []string{"10.244.0.7", "fd00:10:244::7"}, Default: true},
		{Name: "tenant-a/data", Interface: "net1", IPs: []string{"192.168.100.7"}, MAC: "02:00:00:00:00:07", MTU: 9000},
		full,
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{v1alpha1.NetworkStatusAnnotation, v1alpha1.MultusNetworkStatusAnnotation} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: podNamespace, Annotations: map[string]string{key: string(raw)}}}
		if key != nadv1.NetworkStatusAnnot {
			// podnet's own key holds the same JSON; the NAD client reads only
			// Multus' key, so hand it the value there.
			pod.Annotations[nadv1.NetworkStatusAnnot] = pod.Annotations[key]
		}
		got, err := nadutils.GetNetworkStatus(pod)
		if err != nil {
			t.Fatalf("%s: GetNetworkStatus: %v", key, err)
		}
		checkSame(t, entries, got)
	}
	plain, removed := withoutExtensions(t, raw)
	if removed == 0 {
		t.Fatal("the filled entry carries no podnet.io/ extension: the check of the NAD client ignoring them tests nothing")
	}
	dec := json.NewDecoder(bytes.NewReader(plain))
	dec.DisallowUnknownFields()
	var strict []nadv1.NetworkStatus
	if err := dec.Decode(&strict); err != nil {
		t.Fatalf("strict decode into the NAD NetworkStatus type: %v\n%s", err, raw)
	}
	checkSame(t, entries, strict)
	if !strict[0].Default || strict[0].Interface != "eth0" {
		t.Fatalf("first entry %+v is not the default network on eth0", strict[0])
	}
}

// checkSame compares podnet's entries with what the NAD type read, field by
// field through the JSON names.
func checkSame(t *testing.T, want []v1alpha1.NetworkStatus, got []nadv1.NetworkStatus) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("NAD read %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := jsonFields(t, want[i]), jsonFields(t, got[i])
		for k := range w {
			if strings.HasPrefix(k, extensionPrefix) {
				delete(w, k)
			}
		}
		if !reflect.DeepEqual(w, g) {
			t.Errorf("entry %d: podnet wrote %v, the NAD type read %v", i, w, g)
		}
	}
}

func jsonFields(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// extensionPrefix starts the keys of podnet's own additions to a status
// entry, which Multus' readers ignore.
const extensionPrefix = "podnet.io/"

// withoutExtensions returns the JSON list of entries raw without the
// podnet.io/ keys of each entry, and how many it removed.
func withoutExtensions(t *testing.T, raw []byte) ([]byte, int) {
	t.Helper()
	var entries []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		t.Fatal(err)
	}
	removed := 0
	for _, e := range entries {
		for k := range e {
			if strings.HasPrefix(k, extensionPrefix) {
				delete(e, k)
				removed++
			}
		}
	}
	out, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return out, removed
}

// fill sets every field of a struct to a non-zero value of its kind.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Kind() {
		case reflect.String:
			f.SetString("x-" + strings.ToLower(name))
		case reflect.Int, reflect.Int32, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Struct:
			fill(t, f)
		case reflect.Pointer:
			if f.Type().Elem().Kind() != reflect.Struct {
				t.Fatalf("v1alpha1.NetworkStatus.%s: fill does not know %s; teach it", name, f.Type())
			}
			f.Set(reflect.New(f.Type().Elem()))
			fill(t, f.Elem())
		case reflect.Slice:
			if f.Type().Elem().Kind() != reflect.String {
				t.Fatalf("v1alpha1.NetworkStatus.%s: fill does not know %s; teach it", name, f.Type())
			}
			f.Set(reflect.ValueOf([]string{"x-" + strings.ToLower(name)}))
		default:
			t.Fatalf("v1alpha1.NetworkStatus.%s: fill does not know %s; teach it", name, f.Type())
		}
	}
}
