package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// link matches an inline Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// inlineCode matches a code span, whose brackets are no link.
var inlineCode = regexp.MustCompile("`[^`\n]*`")

// heading matches a Markdown heading line.
var heading = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)

// TestDocsLinksResolve fails when a relative link of README.md or docs/*.md
// names a file that does not exist, or an anchor that no heading of the
// target makes, so that moving a section never leaves a reader at a dead
// end.
func TestDocsLinksResolve(t *testing.T) {
	_, pages := docPages(t)
	checked := 0
	for _, pg := range pages {
		rel, page := pg.rel, pg.path
		for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(withoutCode(pg.text), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s links to %s: %v", rel, target, err)
					continue
				}
			}
			if anchor != "" {
				if !anchors(t, dest)[anchor] {
					t.Errorf("%s links to %s: no heading of %s makes the anchor %q", rel, target, filepath.Base(dest), anchor)
				}
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no page has a relative link: the pattern or the pages moved")
	}
	t.Logf("%d relative links in %d pages checked", checked, len(pages))
}

// anchors returns the anchors GitHub makes of a Markdown file's headings:
// lower case, punctuation dropped, spaces made hyphens.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if !strings.HasSuffix(path, ".md") {
		return out
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range heading.FindAllStringSubmatch(withoutCode(string(text)), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

// withoutCode drops fenced code blocks, whose lines are neither links nor
// headings.
func withoutCode(text string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line)
		}
	}
	return b.String()
}
