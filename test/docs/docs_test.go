package docs

import (
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// cited matches a test, fuzz target or e2e subtest path inside backquotes:
// `TestX`, `TestX/sub_name`, `FuzzY`, `Attacks/Z`.
var cited = regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+(?:/[A-Za-z0-9_.-]+)*|[A-Z][A-Za-z0-9]+(?:/[A-Z][A-Za-z0-9_.-]*)+)`")

// TestDocsCiteRealTests fails when a page names a test that no Go file
// defines, or a subtest that no t.Run starts, so a claim never outlives
// the test that shows it.
func TestDocsCiteRealTests(t *testing.T) {
	root, pages := docPages(t)
	funcs, runs := testNames(t, root)
	checked := 0
	for _, pg := range pages {
		rel := pg.rel
		for _, m := range cited.FindAllStringSubmatch(pg.text, -1) {
			parts := strings.Split(m[1], "/")
			if strings.HasPrefix(parts[0], "Test") || strings.HasPrefix(parts[0], "Fuzz") {
				if !funcs[parts[0]] {
					t.Errorf("%s cites %s: no Go file defines func %s", rel, m[1], parts[0])
				}
				parts = parts[1:]
			}
			for _, p := range parts {
				if !runs[p] {
					t.Errorf("%s cites %s: no test file names a subtest %q", rel, m[1], p)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no page cites a test: the pattern or the pages moved")
	}
	t.Logf("%d citations of tests in %d pages checked", checked, len(pages))
}

// page is one page of documentation: README.md or docs/*.md.
type page struct {
	path, rel, text string
}

// docPages returns the repository's root and its pages, read.
func docPages(t *testing.T) (root string, pages []page) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range append([]string{filepath.Join(root, "README.md")}, more...) {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		pages = append(pages, page{path: path, rel: rel, text: string(text)})
	}
	return root, pages
}

var (
	funcDecl = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
)

// testNames reads every Go test file: the test and fuzz functions, and the
// subtest names (as go test prints them: spaces become underscores).
func testNames(t *testing.T, root string) (funcs, runs map[string]bool) {
	funcs, runs = map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_output" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range funcDecl.FindAllStringSubmatch(string(src), -1) {
			funcs[m[1]] = true
		}
		for _, lit := range stringLiterals(src) {
			runs[strings.ReplaceAll(lit, " ", "_")] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs, runs
}

// stringLiterals returns the string literals of a Go file. Subtests are
// named by t.Run("x"), by tables ({name: "x"}) or by expressions, so any
// literal may be one: weaker than following the calls, but a name that no
// test file spells at all is surely gone.
func stringLiterals(src []byte) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", fset.Base(), len(src)), src, nil, 0)
	var out []string
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		if tok == token.STRING {
			if v, err := strconv.Unquote(lit); err == nil {
				out = append(out, v)
			}
		}
	}
}
