package apiserver

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/toolpath"
)

// RegisterWebhooks installs the webhook configurations a kustomization under config/ builds (as
// they would be deployed), pointed at a webhook server on loopback (https://<hostPort><path>)
// with caPEM as bundle: there is no Service network in the test control planes. Names get a
// prefix so several servers can coexist.
// Each mutate function may adjust every webhook entry before the configuration is created.
func RegisterWebhooks(ctx context.Context, c client.Client, kustomization, prefix, hostPort string, caPEM []byte, mutate ...func(hook map[string]any)) error {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return err
	}
	objs, err := Kustomize(filepath.Join(root, kustomization))
	if err != nil {
		return err
	}
	for _, obj := range objs {
		obj.SetName(prefix + obj.GetName())
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		for i := range hooks {
			hook := hooks[i].(map[string]any)
			path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
			hook["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://%s%s", hostPort, path),
				"caBundle": base64.StdEncoding.EncodeToString(caPEM),
			}
			for _, m := range mutate {
				m(hook)
			}
		}
		if err := unstructured.SetNestedSlice(obj.Object, hooks, "webhooks"); err != nil {
			return err
		}
		err := c.Create(ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			// A webhook started again (on another port): point the registration at it.
			existing := &unstructured.Unstructured{}
			existing.SetGroupVersionKind(obj.GroupVersionKind())
			if err = c.Get(ctx, client.ObjectKeyFromObject(obj), existing); err == nil {
				obj.SetResourceVersion(existing.GetResourceVersion())
				err = c.Update(ctx, obj)
			}
		}
		if err != nil {
			return fmt.Errorf("registering %s: %w", obj.GetName(), err)
		}
	}
	return nil
}
