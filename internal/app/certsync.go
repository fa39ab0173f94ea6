package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// secretToFiles copies the rotator's Secret into the webhook's certificate directory. The
// rotator only updates the Secret and waits for the files to match it; a kubelet volume would copy
// them, but only after its sync delay (up to a minute) and never outside a cluster. Copying here
// makes every replica serve a rotated certificate within seconds, wherever it runs.
func secretToFiles(reader client.Reader, key types.NamespacedName, dir string) manager.RunnableFunc {
	return func(ctx context.Context) error {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		for {
			secret := &corev1.Secret{}
			if err := reader.Get(ctx, key, secret); err == nil {
				for _, name := range []string{"tls.crt", "tls.key", "ca.crt"} {
					if data := secret.Data[name]; len(data) > 0 {
						_ = writeIfChanged(filepath.Join(dir, name), data)
					}
				}
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * time.Second):
			}
		}
	}
}

// writeIfChanged replaces a file atomically when its content differs, so the webhook server's
// certificate watcher never reads half a certificate.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
