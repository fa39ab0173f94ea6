// Package thirdparty embeds the CRDs of other projects' kinds that `make manifests` generates
// from the project's local types: KAI's PodGroup, Queue and Topology (kai/) and NVIDIA's
// ComputeDomain (nvidia/). The local cluster and the tests install them in place of the CRDs
// those projects publish, so a clone needs nothing beside it; the deploy overlays never install
// them (KAI and NVIDIA's driver do, on a real cluster). An optional test tier compares them
// with the published CRDs.
package thirdparty

import (
	"embed"
	"io/fs"
)

//go:embed kai/*.yaml nvidia/*.yaml
var files embed.FS

// CRDs holds the generated CRDs as kai/*.yaml and nvidia/*.yaml.
var CRDs fs.FS = files
