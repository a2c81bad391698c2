package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// How a template expression goes into the YAML that kustomize rendered:
// the generator puts a token where the expression belongs, marshals the
// object, and then rewrites each line that holds a token. Working on the
// marshalled text (not on a YAML tree) keeps every other line exactly as
// deploy/ has it.
type tokenKind int

const (
	// inline: the token is (part of) a scalar; it becomes {{ expr }}.
	inline tokenKind = iota
	// block: "key: TOKEN" becomes "key:" and expr as indented YAML.
	block
	// optBlock: as block, but the key is left out when expr is empty.
	optBlock
	// optScalar: "key: TOKEN" becomes "key: {{ . }}", left out when expr
	// is empty.
	optScalar
	// lines: the whole line ("- TOKEN" or "TOKEN: x") becomes expr, with
	// every %[1]s replaced by the line's indent and %[2]d by its width.
	lines
)

type slot struct {
	kind tokenKind
	expr string
}

// tokens hands out tokens and rewrites them.
type tokens struct{ list []slot }

var tokenRE = regexp.MustCompile(`zzhelm(\d{4})zz`)

func (t *tokens) add(kind tokenKind, expr string) string {
	t.list = append(t.list, slot{kind: kind, expr: expr})
	return fmt.Sprintf("zzhelm%04dzz", len(t.list)-1)
}

var (
	keyLine  = regexp.MustCompile(`^(\s*)([^\s:][^:]*): zzhelm\d{4}zz$`)
	itemLine = regexp.MustCompile(`^(\s*)- zzhelm\d{4}zz$`)
	tokLine  = regexp.MustCompile(`^(\s*)zzhelm\d{4}zz: x$`)
)

// rewrite turns every token in text into its template text.
func (t *tokens) rewrite(text string) (string, error) {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		m := tokenRE.FindAllStringSubmatchIndex(line, -1)
		if m == nil {
			out = append(out, line)
			continue
		}
		tok, err := t.at(line[m[0][2]:m[0][3]])
		if err != nil {
			return "", err
		}
		if tok.kind == inline {
			out = append(out, tokenRE.ReplaceAllStringFunc(line, func(s string) string {
				n, _ := strconv.Atoi(s[6:10])
				return "{{ " + t.list[n].expr + " }}"
			}))
			continue
		}
		r, err := tok.lineText(line)
		if err != nil {
			return "", err
		}
		out = append(out, r)
	}
	return strings.Join(out, "\n"), nil
}

func (t *tokens) at(n string) (slot, error) {
	i, err := strconv.Atoi(n)
	if err != nil || i >= len(t.list) {
		return slot{}, fmt.Errorf("unknown token %q", n)
	}
	return t.list[i], nil
}

// lineText is the template text of a line holding one non-inline token.
func (tok slot) lineText(line string) (string, error) {
	switch tok.kind {
	case block, optBlock, optScalar:
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			return "", fmt.Errorf("token of %q is not the value of a key on its own line: %q", tok.expr, line)
		}
		ind, key := m[1], m[2]
		n := len(ind) + 2
		switch tok.kind {
		case block:
			return fmt.Sprintf("%s%s:\n{{- toYaml %s | nindent %d }}", ind, key, tok.expr, n), nil
		case optBlock:
			return fmt.Sprintf("{{- with %s }}\n%s%s:\n{{- toYaml . | nindent %d }}\n{{- end }}", tok.expr, ind, key, n), nil
		default:
			return fmt.Sprintf("{{- with %s }}\n%s%s: {{ . }}\n{{- end }}", tok.expr, ind, key), nil
		}
	case lines:
		m := itemLine.FindStringSubmatch(line)
		if m == nil {
			m = tokLine.FindStringSubmatch(line)
		}
		if m == nil {
			return "", fmt.Errorf("token of %q is not a list item or a key of its own: %q", tok.expr, line)
		}
		return strings.NewReplacer("%[1]s", m[1], "%[2]d", strconv.Itoa(len(m[1]))).Replace(tok.expr), nil
	}
	return "", fmt.Errorf("token kind %d in %q", tok.kind, line)
}
