// Package upstreamcorpus locates the optional corpus of upstream files — upstream Grove's e2e
// manifests (compat/grove-e2e, compat/grove-coherent) and the CRDs KAI and NVIDIA publish
// (crds/kai, crds/nvidia) — that the extra test tier applies unchanged or compares the
// project's own types with. Nothing in the default tiers reads it: a clone works on its own.
// The corpus is found only through the variable GROVE_UPSTREAM_CORPUS; without it the tests of
// the extra tier skip, saying in one line which tier did not run and how to run it.
package upstreamcorpus

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Env names the folder that holds the corpus (with compat/ and crds/ inside).
const Env = "GROVE_UPSTREAM_CORPUS"

// Dir returns the corpus folder, or "" and why not when the variable is unset or names no folder.
// The path must be absolute: each test runs in its own package's folder, where a relative one
// would name something else (make test makes it absolute).
func Dir() (string, error) {
	dir := os.Getenv(Env)
	if dir == "" {
		return "", fmt.Errorf("%s is unset", Env)
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%s=%s is not an absolute path", Env, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s=%s is no folder", Env, dir)
	}
	return dir, nil
}

// Path returns a path inside the corpus, or skips t: the upstream tier did not run, said in one
// line with how to run it. A path the corpus should hold but does not fails t: a corpus that is
// given must be whole.
func Path(t testing.TB, parts ...string) string {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("upstream corpus tier not run (%s is unset): set %s to the folder holding compat/ and crds/ (CI: ../shared beside the clone)", Env, Env)
	}
	dir, err := Dir()
	if err != nil {
		// Given but wrong: the tier was asked for, so it must not skip unnoticed.
		t.Fatalf("upstream corpus tier: %v", err)
	}
	path := filepath.Join(append([]string{dir}, parts...)...)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s=%s lacks %s: %v", Env, dir, filepath.Join(parts...), err)
	}
	return path
}
