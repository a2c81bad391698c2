package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const events = `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"a says hello\n"}
{"Action":"run","Package":"p","Test":"TestA/sub"}
{"Action":"output","Package":"p","Test":"TestA/sub","Output":"sub went wrong\n"}
{"Action":"fail","Package":"p","Test":"TestA/sub","Elapsed":1}
{"Action":"fail","Package":"p","Test":"TestA","Elapsed":2}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"b is quiet\n"}
{"Action":"pass","Package":"p","Test":"TestB","Elapsed":42.5}
{"Action":"run","Package":"p","Test":"TestC"}
{"Action":"pass","Package":"p","Test":"TestC","Elapsed":0.1}
{"Action":"output","Package":"p","Output":"FAIL\tp\t44.6s\n"}
{"Action":"fail","Package":"p","Elapsed":44.6}
`

func TestRecordPrintsFailuresAndSlowTestsOnly(t *testing.T) {
	dir := t.TempDir()
	var out strings.Builder
	if err := record(strings.NewReader(events), &out, filepath.Join(dir, "unit.json")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"a says hello", "sub went wrong", "--- PASS: p TestB (42.5s)", "FAIL\tp\t44.6s"} {
		if !strings.Contains(got, want) {
			t.Errorf("printed %q, missing %q", got, want)
		}
	}
	for _, unwanted := range []string{"b is quiet", "TestC"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("printed %q, which should not hold %q", got, unwanted)
		}
	}
	kept, err := os.ReadFile(filepath.Join(dir, "unit.json"))
	if err != nil || string(kept) != events {
		t.Fatalf("record kept %q (%v), want every event", kept, err)
	}

	if err := os.WriteFile(filepath.Join(dir, "stages.tsv"), []byte("go vet\t12\tpassed\nunit\t45\tFAILED\nfuzzing (beside)\t100\tpassed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := report(&out, dir); err != nil {
		t.Fatal(err)
	}
	rep := out.String()
	for _, want := range []string{"| go vet | 12 | passed |", "| all stages but the work beside them | 57 |", "| unit | p | TestB | 42.5 | pass |", "| unit | p | TestA/sub | 1.0 | fail |"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report %q, missing %q", rep, want)
		}
	}
	if strings.Index(rep, "TestB") > strings.Index(rep, "| TestA |") {
		t.Errorf("report %q: the slowest test is not first", rep)
	}
}
