package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// apiNameConstructors are the functions api/v1alpha1 may export besides
// the generated DeepCopy: each builds or parses the name of an object
// the API defines, which every component must spell alike.
var apiNameConstructors = []string{"DeviceClassName", "ParseDeviceClassName", "MACClaimName", "MACSlotName", "ReservedPodKey"}

// TestAPIExportsNoDecision: api/v1alpha1 is the contract every component
// and every user who vendors the types imports, so it holds types,
// markers, constants and name constructors only. A decision (how to
// hold a pod, what a range allows) belongs to the package that owns it
// (pkg/hold, pkg/policy, pkg/ipam/rules), where the layering rules keep
// it pure.
func TestAPIExportsNoDecision(t *testing.T) {
	files := productFiles(t, "../../api/v1alpha1")
	if len(files) < 5 {
		t.Fatalf("found %d files in api/v1alpha1: the check would prove nothing", len(files))
	}
	for name, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !fn.Name.IsExported() {
				continue
			}
			switch {
			case fn.Recv != nil && strings.HasPrefix(fn.Name.Name, "DeepCopy"):
			case fn.Recv == nil && slices.Contains(apiNameConstructors, fn.Name.Name):
			default:
				t.Errorf("%s: api/v1alpha1 exports %s: move the decision to the package that owns it, or, for a name constructor, list it in apiNameConstructors", name, fn.Name.Name)
			}
		}
	}
}

// TestDocNamesRooms: a package's doc.go names what it is made of, so
// that a reader starts there. The agent's and the controller's name
// every room below them; the controller's every reconciler of its own
// (by type or file) too.
func TestDocNamesRooms(t *testing.T) {
	for _, c := range []struct {
		dir  string
		most int
	}{{"agent", 5}, {"controller", 3}} {
		doc := readDoc(t, "../../"+c.dir)
		entries, err := os.ReadDir("../../" + c.dir)
		if err != nil {
			t.Fatal(err)
		}
		rooms := 0
		for _, e := range entries {
			if !e.IsDir() || len(productFiles(t, filepath.Join("../../"+c.dir, e.Name()))) == 0 {
				continue
			}
			rooms++
			if !strings.Contains(doc, c.dir+"/"+e.Name()) {
				t.Errorf("%s/doc.go does not name its room %s/%s", c.dir, c.dir, e.Name())
			}
		}
		if rooms < c.most {
			t.Fatalf("found %d rooms under %s/: the check would prove nothing", rooms, c.dir)
		}
	}

	// Each reconciler is named by type or file in the controller's
	// doc.go or in its room's.
	top := readDoc(t, "../../controller")
	reconcilers := 0
	dirs, err := filepath.Glob("../../controller/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range append(dirs, "../../controller") {
		files := productFiles(t, dir)
		if len(files) == 0 {
			continue
		}
		doc := top
		if dir != "../../controller" {
			doc += readDoc(t, dir)
		}
		for name, f := range files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv == nil || fn.Name.Name != "Reconcile" {
					continue
				}
				reconcilers++
				typ := receiverType(fn)
				if !strings.Contains(doc, typ) && !strings.Contains(doc, filepath.Base(name)) {
					t.Errorf("the docs of %s name neither the reconciler %s nor its file %s", dir, typ, filepath.Base(name))
				}
			}
		}
	}
	if reconcilers < 5 {
		t.Fatalf("found %d reconcilers under controller/: the check would prove nothing", reconcilers)
	}
}

// productFiles parses the non-test Go files of one package folder.
func productFiles(t *testing.T, dir string) map[string]*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*ast.File{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = f
	}
	return out
}

func readDoc(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "doc.go"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// receiverType is the name of a method's receiver type.
func receiverType(fn *ast.FuncDecl) string {
	x := fn.Recv.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if id, ok := x.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
