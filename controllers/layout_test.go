package controllers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/kubegrove/grove/"

// binaries maps a controllers folder to the binary that runs it, and each binary's cmd folder.
var binaries = map[string]string{
	"operator": "cmd/grove-operator",
	"backend":  "cmd/backend-controller",
	"trainer":  "cmd/trainer-controller",
}

// imports returns, per Go file under dir (relative to the module root), the module-local
// import paths it names.
func imports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(filepath.Join("..", dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				out[path] = append(out[path], strings.TrimPrefix(p, module))
			}
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

func TestNoBinaryImportsAnotherBinarysControllers(t *testing.T) {
	for owner, cmd := range binaries {
		for _, dir := range []string{filepath.Join("controllers", owner), cmd} {
			for file, paths := range imports(t, dir) {
				for _, p := range paths {
					for other := range binaries {
						if other != owner {
							assert.False(t, strings.HasPrefix(p, "controllers/"+other+"/"),
								"%s (run by %s) imports %s, a package of another binary", file, cmd, p)
						}
					}
				}
			}
		}
	}
}

func TestEveryControllerPackageSitsUnderItsBinarysFolder(t *testing.T) {
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			_, known := binaries[e.Name()]
			assert.True(t, known, "controllers/%s names no binary: put it under the folder of the binary that runs it", e.Name())
		}
	}
}

// productImports is imports without test files: what a binary links.
func productImports(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := imports(t, dir)
	for file := range out {
		if strings.HasSuffix(file, "_test.go") {
			delete(out, file)
		}
	}
	return out
}

// schedulers are the scheduler packages under backends/.
func schedulers(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "backends"))
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" { // backends/internal: what every scheduler package shares
			out = append(out, "backends/"+e.Name())
		}
	}
	require.NotEmpty(t, out)
	return out
}

// underAny reports whether the import path p is one of trees or inside one.
func underAny(p string, trees ...string) bool {
	for _, tree := range trees {
		if p == tree || strings.HasPrefix(p, tree+"/") {
			return true
		}
	}
	return false
}

func TestWebhooksBackendsAndInternalPackagesImportNoBinarysControllers(t *testing.T) {
	cases := []struct {
		dir       string
		forbidden []string
		why       string
	}{
		{"webhooks", []string{"controllers", "cmd"}, "admission runs in grove-webhook, which runs no controller"},
		{"backends", []string{"controllers", "webhooks", "cmd"}, "a backend is a library each binary builds its own share of"},
		{"internal", []string{"controllers", "webhooks", "backends", "cmd"}, "internal packages serve every binary and know none of them"},
	}
	for _, tc := range cases {
		t.Run(tc.dir, func(t *testing.T) {
			for file, paths := range productImports(t, tc.dir) {
				for _, p := range paths {
					assert.False(t, underAny(p, tc.forbidden...), "%s imports %s: %s", file, p, tc.why)
				}
			}
		})
	}
}

func TestOnlyTheBackendFrameworkImportsASchedulerPackage(t *testing.T) {
	scheds := schedulers(t)
	for _, dir := range []string{"cmd", "controllers", "webhooks", "internal"} {
		for file, paths := range productImports(t, dir) {
			for _, p := range paths {
				assert.False(t, underAny(p, scheds...),
					"%s imports the scheduler package %s: a binary reaches a backend through its share (backends.PodPreparer, Admitter, Syncer or Renderer)", file, p)
			}
		}
	}
	for _, sched := range scheds {
		for file, paths := range productImports(t, sched) {
			for _, p := range paths {
				assert.False(t, underAny(p, "backends") && !underAny(p, "backends/internal"), "%s imports %s: a scheduler package stands on its own", file, p)
			}
		}
	}
}

func TestNoWebhookPackageImportsAnotherAndGroveWebhookServesEach(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("..", "webhooks"))
	require.NoError(t, err)
	served := map[string]bool{}
	for _, paths := range productImports(t, "cmd/grove-webhook") {
		for _, p := range paths {
			served[p] = true
		}
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		pkg := "webhooks/" + e.Name()
		assert.True(t, served[pkg], "%s is not served by cmd/grove-webhook", pkg)
		for file, paths := range productImports(t, pkg) {
			for _, p := range paths {
				assert.False(t, underAny(p, "webhooks"), "%s imports %s: each webhook package stands on its own", file, p)
			}
		}
	}
}
