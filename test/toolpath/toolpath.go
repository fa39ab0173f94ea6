// Package toolpath finds the repository root and the binaries that `make tools` built, so every
// test tier runs the same pinned control plane whatever directory `go test` started in.
package toolpath

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvToolsBin overrides the directory that holds the tool binaries (default: <repo>/bin/tools).
const EnvToolsBin = "GROVE_TOOLS_BIN"

// RepoRoot returns the directory of the project's go.mod, found by walking up from the working
// directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isProjectModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module github.com/kubegrove/grove above the working directory")
		}
		dir = parent
	}
}

func isProjectModule(gomod []byte) bool {
	const want = "module github.com/kubegrove/grove\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}

// BinDir returns the directory holding the tool binaries.
func BinDir() (string, error) {
	if dir := os.Getenv(EnvToolsBin); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "tools"), nil
}

// Bin returns the path of one tool binary, or an error that says how to build it.
func Bin(name string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("tool %q not found in %s: run `make tools` first", name, dir)
	}
	return path, nil
}
