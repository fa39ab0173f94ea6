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
