package main

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMonitoringNamesOnlyPodnetMetrics renders the chart with monitoring
// on and checks that every metric an alert expression or a dashboard
// panel names is one podnet registers, as read from the Go sources of its
// components (the Name of every prometheus.*Opts literal), so that a
// renamed metric breaks the test and not the operator's alerts.
func TestMonitoringNamesOnlyPodnetMetrics(t *testing.T) {
	exported := registeredMetrics(t)
	objs := render(t, Namespace, "monitoring.serviceMonitor.enabled=true",
		"monitoring.prometheusRule.enabled=true", "monitoring.dashboard.enabled=true")
	for _, id := range []string{"ServiceMonitor/podnet-system/podnet", "Service/podnet-system/podnet-agent-metrics",
		"Service/podnet-system/podnet-webhook-metrics", "Service/podnet-system/podnet-controller-metrics"} {
		if _, ok := objs[id]; !ok {
			t.Errorf("monitoring.serviceMonitor.enabled renders no %s", id)
		}
	}
	exprs := map[string]string{}
	rule, ok := objs["PrometheusRule/podnet-system/podnet"]
	if !ok {
		t.Fatal("monitoring.prometheusRule.enabled renders no PrometheusRule podnet")
	}
	for _, g := range rule["spec"].(map[string]any)["groups"].([]any) {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			r := r.(map[string]any)
			exprs["alert "+r["alert"].(string)] = r["expr"].(string)
		}
	}
	for _, want := range []string{"podnet_agent_errors_total", "podnet_pool_addresses_available", "podnet_webhook_decisions_total"} {
		if !strings.Contains(strings.Join(values(exprs), "\n"), want) {
			t.Errorf("no alert watches %s (failed attaches, exhausted pools, a webhook that refuses)", want)
		}
	}
	cm, ok := objs["ConfigMap/podnet-system/podnet-dashboard"]
	if !ok {
		t.Fatal("monitoring.dashboard.enabled renders no ConfigMap podnet-dashboard")
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal([]byte(cm["data"].(map[string]any)["podnet.json"].(string)), &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs["panel "+p.Title+" target "+strconv.Itoa(i)] = tg.Expr
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("only %d expressions in the rules and the dashboard", len(exprs))
	}
	for where, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("%s names no metric: %s", where, e)
		}
		for _, n := range names {
			if !exported[n] {
				t.Errorf("%s names %s, which podnet does not export: %s", where, n, e)
			}
		}
	}
}

func values(m map[string]string) []string {
	var v []string
	for _, s := range m {
		v = append(v, s)
	}
	return v
}

// registeredMetrics reads, from the product's Go sources (not hack/ or
// test/), the Name of every prometheus.<Kind>Opts literal; a histogram's
// series (_bucket, _sum, _count) and a summary's count as its names too.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	fset := token.NewFileSet()
	for _, dir := range []string{"agent", "webhook", "controller", "pkg", "cnisocket", "cniplugin"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				kind := optsKind(lit.Type)
				if kind == "" {
					return true
				}
				for _, el := range lit.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "Name" {
						continue
					}
					s, ok := kv.Value.(*ast.BasicLit)
					if !ok {
						t.Errorf("%s: a metric Name that is not a string literal", fset.Position(kv.Pos()))
						continue
					}
					name, _ := strconv.Unquote(s.Value)
					names[name] = true
					if kind == "Histogram" || kind == "Summary" {
						for _, suffix := range []string{"_bucket", "_sum", "_count"} {
							names[name+suffix] = true
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{"podnet_agent_", "podnet_webhook_", "podnet_pool_"} {
		found := false
		for n := range names {
			found = found || strings.HasPrefix(n, want)
		}
		if !found {
			t.Fatalf("no metric %s* registered in the sources: the scan is broken", want)
		}
	}
	return names
}

// optsKind is "Counter" for prometheus.CounterOpts and so on, "" for
// other types.
func optsKind(e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "prometheus" || !strings.HasSuffix(sel.Sel.Name, "Opts") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(sel.Sel.Name, "Opts"), "Vec")
}

var (
	promStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	// by (a, b), without (...), on (...), ignoring (...), group_left (...)
	promLabelLists = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdent      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promKeywords   = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
)

// metricNames lists the metric names a PromQL expression selects: the
// identifiers left after strings, label matchers, ranges and label lists
// are cut out, less keywords and function names (an identifier followed
// by "(").
func metricNames(expr string) []string {
	e := promStrings.ReplaceAllString(expr, " ")
	e = promMatchers.ReplaceAllString(e, " ")
	e = promRanges.ReplaceAllString(e, " ")
	e = promLabelLists.ReplaceAllString(e, " ")
	var names []string
	for _, loc := range promIdent.FindAllStringIndex(e, -1) {
		id := e[loc[0]:loc[1]]
		rest := strings.TrimLeft(e[loc[1]:], " \t\n")
		if promKeywords[strings.ToLower(id)] || strings.HasPrefix(rest, "(") {
			continue
		}
		// A number's exponent or a duration's unit is no name.
		if loc[0] > 0 && (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9' || e[loc[0]-1] == '.') {
			continue
		}
		names = append(names, id)
	}
	return names
}
