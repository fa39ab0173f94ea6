// Package cacheindex is the shape of a binary's cache indexes: each binary lists its own
// (controllers/<binary>/fieldindex) and registers them once at start.
package cacheindex

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is one field index: the kind, the field's name, what it extracts.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// Register registers every index with a manager's cache.
func Register(ctx context.Context, indexer client.FieldIndexer, indexes []Index) error {
	for _, i := range indexes {
		if err := indexer.IndexField(ctx, i.Object, i.Field, i.Extract); err != nil {
			return err
		}
	}
	return nil
}
