package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) != 3 || (os.Args[1] != "record" && os.Args[1] != "report") {
		fmt.Fprintln(os.Stderr, "usage: testlog record FILE < go-test-json | testlog report DIR")
		os.Exit(2)
	}
	var err error
	if os.Args[1] == "record" {
		err = record(os.Stdin, os.Stdout, os.Args[2])
	} else {
		err = report(os.Stdout, os.Args[2])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlog:", err)
		os.Exit(1)
	}
}

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Time       time.Time `json:",omitempty"`
	Action     string
	Package    string  `json:",omitempty"`
	Test       string  `json:",omitempty"`
	Elapsed    float64 `json:",omitempty"`
	Output     string  `json:",omitempty"`
	ImportPath string  `json:",omitempty"`
}

// slowLine is how long a passing test must take for record to print it.
const slowLine = 10.0

// record copies the events of in to file and prints the readable part to out.
func record(in io.Reader, out io.Writer, file string) error {
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the record %s: %w", file, err)
	}
	defer f.Close()
	p := newPrinter(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if _, err := f.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("write the record %s: %w", file, err)
		}
		var e event
		if json.Unmarshal(line, &e) != nil || e.Action == "" {
			// Not an event: go test's own words (e.g. a setup failure).
			fmt.Fprintln(out, string(line))
			continue
		}
		p.event(e)
	}
	return sc.Err()
}

// printer turns events into the lines a reader of the log needs.
type printer struct {
	out io.Writer
	// held is each running test's output (key: package and test), printed
	// only if the test or one of its parents fails.
	held map[string][]string
}

func newPrinter(out io.Writer) *printer { return &printer{out: out, held: map[string][]string{}} }

func (p *printer) event(e event) {
	key := e.Package + " " + e.Test
	switch {
	case e.Action == "build-output":
		fmt.Fprint(p.out, e.Output)
	case e.Test == "" && e.Action == "output":
		if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" {
			fmt.Fprint(p.out, e.Output)
		}
	case e.Action == "output":
		p.held[key] = append(p.held[key], e.Output)
	case e.Action == "fail" && e.Test != "":
		// A parent fails after its children: print what is still held of
		// it and of every child (children that passed were dropped).
		for _, k := range heldUnder(p.held, e.Package, e.Test) {
			for _, l := range p.held[k] {
				fmt.Fprint(p.out, l)
			}
			delete(p.held, k)
		}
	case (e.Action == "pass" || e.Action == "skip") && e.Test != "":
		if e.Action == "skip" || e.Elapsed >= slowLine {
			fmt.Fprintf(p.out, "--- %s: %s %s (%.1fs)\n", strings.ToUpper(e.Action), e.Package, e.Test, e.Elapsed)
		}
		if e.Action == "skip" {
			for _, l := range p.held[key] {
				fmt.Fprint(p.out, l)
			}
		}
		delete(p.held, key)
	}
}

// heldUnder is the keys of test and its subtests in package pkg, in order.
func heldUnder(held map[string][]string, pkg, test string) []string {
	var keys []string
	for k := range held {
		if k == pkg+" "+test || strings.HasPrefix(k, pkg+" "+test+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// result is one finished test of a record.
type result struct {
	Stage, Package, Test, Action string
	Elapsed                      float64
}

// report prints dir's stage times and its slowest tests.
func report(out io.Writer, dir string) error {
	stages, err := readStages(filepath.Join(dir, "stages.tsv"))
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return err
	}
	var results []result
	for _, f := range files {
		rs, err := readResults(f)
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	fmt.Fprintln(out, "\n== time per stage")
	fmt.Fprintln(out, "| stage | seconds | result |\n|---|---:|---|")
	total := 0
	for _, s := range stages {
		fmt.Fprintf(out, "| %s | %d | %s |\n", s[0], atoi(s[1]), s[2])
		// Work beside the other stages takes none of the run's time.
		if !strings.HasSuffix(s[0], "(beside)") {
			total += atoi(s[1])
		}
	}
	fmt.Fprintf(out, "| all stages but the work beside them | %d | |\n", total)
	printSlowest(out, "30 slowest tests", results, 30, func(r result) bool { return !strings.Contains(r.Test, "/") })
	printSlowest(out, "20 slowest subtests", results, 20, func(r result) bool { return strings.Contains(r.Test, "/") })
	return nil
}

func printSlowest(out io.Writer, title string, results []result, n int, keep func(result) bool) {
	var rs []result
	for _, r := range results {
		if keep(r) {
			rs = append(rs, r)
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Elapsed > rs[j].Elapsed })
	fmt.Fprintf(out, "\n== %s\n| stage | package | test | seconds | result |\n|---|---|---|---:|---|\n", title)
	for i, r := range rs {
		if i == n {
			break
		}
		fmt.Fprintf(out, "| %s | %s | %s | %.1f | %s |\n", r.Stage, r.Package, r.Test, r.Elapsed, r.Action)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// readStages reads hack/stage.sh's record: stage, seconds, result per line.
func readStages(file string) ([][3]string, error) {
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("read the stage record: %w", err)
	}
	var stages [][3]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) == 3 {
			stages = append(stages, [3]string{f[0], f[1], f[2]})
		}
	}
	return stages, nil
}

// readResults reads the finished tests of one record; its file name,
// less .json, is the stage's short name.
func readResults(file string) ([]result, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read the record: %w", err)
	}
	defer f.Close()
	stage := strings.TrimSuffix(filepath.Base(file), ".json")
	var rs []result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" {
			continue
		}
		if e.Action == "pass" || e.Action == "fail" || e.Action == "skip" {
			rs = append(rs, result{Stage: stage, Package: e.Package, Test: e.Test, Action: e.Action, Elapsed: e.Elapsed})
		}
	}
	return rs, sc.Err()
}
