package cri

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func bytesField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

// TestDecodeContainer reads what containerd's containers service answers,
// skipping the fields it does not need, and refuses broken answers
// without panicking.
func TestDecodeContainer(t *testing.T) {
	label := func(k, v string) []byte { return bytesField(bytesField(nil, 1, []byte(k)), 2, []byte(v)) }
	spec := []byte(`{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1"}]}}`)
	var container []byte
	container = bytesField(container, 1, []byte("sb1"))
	container = bytesField(container, 2, label(PodUIDLabel, "u1"))
	container = bytesField(container, 2, label("io.kubernetes.pod.name", "p"))
	container = protowire.AppendVarint(protowire.AppendTag(container, 9, protowire.VarintType), 7) // a field not read
	container = bytesField(container, 5, bytesField(bytesField(nil, 1, []byte("types.containerd.io/opencontainers/runtime-spec/1/Spec")), 2, spec))
	resp := bytesField(nil, 1, container)

	labels, got, err := decodeContainer(resp)
	if err != nil || labels[PodUIDLabel] != "u1" || labels["io.kubernetes.pod.name"] != "p" || string(got) != string(spec) {
		t.Fatalf("decode: labels %v spec %s err %v", labels, got, err)
	}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":            {nil, "no container"},
		"cut":              {resp[:len(resp)-3], "protobuf"},
		"no spec":          {bytesField(nil, 1, bytesField(nil, 2, label("a", "b"))), "no spec"},
		"garbage tag":      {[]byte{0xff, 0xff, 0xff}, "protobuf"},
		"cut inside label": {bytesField(nil, 1, bytesField(nil, 2, []byte{0x0a, 0x05, 'a'})), "protobuf"},
	} {
		if _, _, err := decodeContainer(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

func FuzzDecodeContainer(f *testing.F) {
	f.Add(bytesField(nil, 1, bytesField(nil, 5, bytesField(nil, 2, []byte("{}")))))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeContainer(b) // must not panic
	})
}
