package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// secretToFiles copies the rotator's Secret into the webhook's certificate directory whenever
// the Secret changes, watched through an informer of that one Secret. The rotator only updates
// the Secret and waits for the files to match it; a kubelet volume would copy them, but only
// after its sync delay (up to a minute) and never outside a cluster. Copying here makes every
// replica serve a rotated certificate within seconds, wherever it runs.
func secretToFiles(cs kubernetes.Interface, key types.NamespacedName, dir string) manager.RunnableFunc {
	return func(ctx context.Context) error {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(key.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", key.Name).String()
			}))
		copyFiles := func(obj any) {
			secret, ok := obj.(*corev1.Secret)
			if !ok || secret.Name != key.Name { // the field selector already says so, where it is honoured
				return
			}
			for _, name := range []string{"tls.crt", "tls.key", "ca.crt"} {
				if data := secret.Data[name]; len(data) > 0 {
					if err := writeIfChanged(filepath.Join(dir, name), data); err != nil {
						log.FromContext(ctx).Error(err, "copying the serving certificate from its Secret", "secret", klog.KObj(secret), "file", name)
					}
				}
			}
		}
		if _, err := factory.Core().V1().Secrets().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    copyFiles,
			UpdateFunc: func(_, obj any) { copyFiles(obj) },
		}); err != nil {
			return err
		}
		factory.Start(ctx.Done())
		<-ctx.Done()
		factory.Shutdown()
		return nil
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
