// Package crd embeds the generated CustomResourceDefinitions (bases/, written by make manifests),
// so kubectl grove applies the API server's schema defaults exactly as the cluster does.
package crd

import "embed"

// Bases holds bases/*.yaml.
//
//go:embed bases/*.yaml
var Bases embed.FS
