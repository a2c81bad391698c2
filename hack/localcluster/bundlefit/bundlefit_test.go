package bundlefit

import (
	"encoding/json"
	"testing"
)

func TestBundleOf(t *testing.T) {
	for _, c := range []struct {
		args   []string
		bundle string
		ok     bool
	}{
		{[]string{"--root", "/r", "--log-format", "json", "create", "--bundle", "/b", "--pid-file", "/p", "id"}, "/b", true},
		{[]string{"--systemd-cgroup", "run", "-b", "/b2", "id"}, "/b2", true},
		{[]string{"create", "--bundle=/b3", "id"}, "/b3", true},
		{[]string{"create", "id"}, ".", true},
		{[]string{"--root", "/r", "exec", "--process", "/p.json", "id"}, "", false},
		{[]string{"--log-format", "create", "state", "id"}, "", false},
		{[]string{"--version"}, "", false},
	} {
		bundle, ok := bundleOf(c.args)
		if bundle != c.bundle || ok != c.ok {
			t.Errorf("bundleOf(%q) = %q, %v; want %q, %v", c.args, bundle, ok, c.bundle, c.ok)
		}
	}
}

const config = `{"ociVersion":"1.0.2","process":{"args":["/pause"],"oomScoreAdj":-997},"root":{"path":"rootfs"},
"linux":{"resources":{"cpu":{"shares":2},"hugepageLimits":[{"pageSize":"2MB","limit":0}]},"namespaces":[{"type":"network"}]}}`

type fitted struct {
	OCIVersion string
	Process    struct {
		Args        []string
		OOMScoreAdj int
	}
	Root  struct{ Path string }
	Linux struct {
		Resources struct {
			CPU            struct{ Shares int }
			HugepageLimits []any
		}
		Namespaces []any
	}
}

func fit(t *testing.T, m Machine) fitted {
	t.Helper()
	out, changed, err := Fit([]byte(config), m)
	if err != nil || !changed {
		t.Fatalf("Fit(%+v): changed %v, err %v", m, changed, err)
	}
	var got fitted
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.OCIVersion != "1.0.2" || got.Root.Path != "rootfs" || len(got.Process.Args) != 1 ||
		got.Linux.Resources.CPU.Shares != 2 || len(got.Linux.Namespaces) != 1 {
		t.Errorf("fitted config %s: lost a field it must keep", out)
	}
	return got
}

func TestFit(t *testing.T) {
	if got := fit(t, Machine{OOMScoreAdj: 0}); got.Process.OOMScoreAdj != 0 || got.Linux.Resources.HugepageLimits != nil {
		t.Errorf("without hugetlb, own score 0: %+v; want oomScoreAdj 0 and no hugepage limits", got)
	}
	if got := fit(t, Machine{OOMScoreAdj: 0, Hugetlb: true}); got.Process.OOMScoreAdj != 0 || len(got.Linux.Resources.HugepageLimits) != 1 {
		t.Errorf("with hugetlb: %+v; want oomScoreAdj 0 and the hugepage limit kept", got)
	}
	if got := fit(t, Machine{OOMScoreAdj: -1000}); got.Process.OOMScoreAdj != -997 {
		t.Errorf("own score -1000: oomScoreAdj %d, want -997 kept", got.Process.OOMScoreAdj)
	}
	for _, keep := range []string{`{"process":{"oomScoreAdj":500}}`, `{"process":{"args":["x"]}}`, `{"root":{}}`, `{"linux":{"resources":{}}}`} {
		if _, changed, err := Fit([]byte(keep), Machine{}); changed || err != nil {
			t.Errorf("Fit(%s) changed %v, err %v; want it unchanged", keep, changed, err)
		}
	}
	if _, _, err := Fit([]byte("{"), Machine{}); err == nil {
		t.Error("Fit of a broken config: no error")
	}
}
