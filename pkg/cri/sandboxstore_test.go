package cri

import (
	"strings"
	"testing"
)

// criMetadata is a document as containerd 2's CRI stores it under the
// sandbox's "metadata" extension (the shape of
// internal/cri/store/sandbox.Metadata's JSON, trimmed).
const criMetadata = `{"Version":"v1","Metadata":{"ID":"sb1","Name":"p_ns_u1_0","Config":{"metadata":{"name":"p","uid":"u1","namespace":"ns"},"labels":{"io.kubernetes.pod.uid":"u1","io.kubernetes.pod.name":"p"}},"NetNSPath":"/var/run/netns/cni-1","IP":"","RuntimeHandler":""}}`

// storeResponse is a StoreGetResponse holding one sandbox with the given
// extensions (name → Any value).
func storeResponse(ext map[string]string) []byte {
	var sb []byte
	sb = bytesField(sb, 1, []byte("sb1"))
	sb = bytesField(sb, 2, bytesField(nil, 1, []byte("io.containerd.runc.v2")))
	sb = bytesField(sb, 4, bytesField(bytesField(nil, 1, []byte("name")), 2, []byte("p_ns_u1_0")))
	for k, v := range ext {
		anyValue := bytesField(bytesField(nil, 1, []byte("github.com/containerd/cri/pkg/store/sandbox/Metadata")), 2, []byte(v))
		sb = bytesField(sb, 7, bytesField(bytesField(nil, 1, []byte(k)), 2, anyValue))
	}
	sb = bytesField(sb, 10, []byte("podsandbox"))
	return bytesField(nil, 1, sb)
}

// TestStoredSandboxRecord reads the pod UID and netns from what
// containerd 2's sandbox store answers during a sandbox's setup, skips
// the other extensions, and refuses answers that do not name this
// sandbox, its netns or a known metadata version.
func TestStoredSandboxRecord(t *testing.T) {
	resp := storeResponse(map[string]string{"other": `{}`, criMetadataExtension: criMetadata})
	doc, err := decodeSandboxExtension(resp, criMetadataExtension)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recordFromCRIMetadata("sb1", doc)
	if want := (SandboxRecord{PodUID: "u1", NetNS: "/var/run/netns/cni-1"}); err != nil || rec != want {
		t.Fatalf("record = %+v, %v; want %+v", rec, err, want)
	}
	for name, c := range map[string]struct {
		id, doc string
		want    string
	}{
		"another sandbox": {"sb2", criMetadata, `names sandbox "sb1"`},
		"no netns yet":    {"sb1", strings.Replace(criMetadata, "/var/run/netns/cni-1", "", 1), "no network namespace"},
		"unknown version": {"sb1", strings.Replace(criMetadata, `"v1"`, `"v9"`, 1), `version "v9"`},
		"not JSON":        {"sb1", "{", "CRI metadata"},
	} {
		if _, err := recordFromCRIMetadata(c.id, []byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":        {nil, "no sandbox"},
		"no extension": {storeResponse(map[string]string{"other": `{}`}), `no "metadata" extension`},
		"cut":          {resp[:len(resp)-5], "protobuf"},
		"garbage tag":  {[]byte{0xff, 0xff, 0xff}, "protobuf"},
	} {
		if _, err := decodeSandboxExtension(c.b, criMetadataExtension); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, err, c.want)
		}
	}
}

func FuzzDecodeSandboxExtension(f *testing.F) {
	f.Add(storeResponse(map[string]string{criMetadataExtension: criMetadata}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if doc, err := decodeSandboxExtension(b, criMetadataExtension); err == nil {
			_, _ = recordFromCRIMetadata("sb1", doc) // must not panic
		}
	})
}
