package upstreamshapes

import (
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// ClaimTemplate is a ResourceClaimTemplate in ns asking for one device, named device, of class.
func ClaimTemplate(ns, name, device, class string) *resourcev1.ResourceClaimTemplate {
	rct := &resourcev1.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
	}
	rct.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: device, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class}}}
	return rct
}

// SharedClaimTemplate is ext-ns-tpl of SharedNamespace, which rs-test's worker-a shares.
func SharedClaimTemplate() *resourcev1.ResourceClaimTemplate {
	return ClaimTemplate(SharedNamespace, "ext-ns-tpl", "ext-ns-dev", "ext-ns-class")
}

// resourceSharingTemplates is the namespace's own ext-tpl, which rs-test resolves from there.
func resourceSharingTemplates(ns string) []client.Object {
	return []client.Object{ClaimTemplate(ns, "ext-tpl", "ext-dev", "ext-class")}
}

// share is an entry sharing a template with a scope.
func share(name string, scope grovev1alpha1.ResourceSharingScope) grovev1alpha1.ResourceSharingSpec {
	return grovev1alpha1.ResourceSharingSpec{Name: name, Scope: scope}
}

// resourceSharing is upstream's workload covering every level and filter of resource sharing.
// Its templates int-tpl and int-tpl2..8 each ask for one device of int-class(N). The
// PodCliqueSet shares int-tpl5 across replicas and ext-tpl per replica with all its children,
// int-tpl per replica with worker-a only and int-tpl7 across replicas with scaling group sga
// only. The standalone clique worker-a shares int-tpl4 per replica and ext-ns-tpl of rs-shared
// across replicas. The group sga (two replicas of worker-b) shares int-tpl2 across and int-tpl3
// per group replica with its cliques, and int-tpl8 across group replicas with worker-b only;
// worker-b shares int-tpl6 across its replicas. Both cliques have one KAI pod asking for 80Mi.
func resourceSharing(ns string) *grovev1alpha1.PodCliqueSet {
	const all, per = grovev1alpha1.ResourceSharingScopeAllReplicas, grovev1alpha1.ResourceSharingScopePerReplica
	p := builders.PodCliqueSet(ns, "rs-test").
		Clique("worker-a", 1, role("role-a"), builders.MinAvailable(1), onAgents("80Mi"), func(c *grovev1alpha1.PodCliqueTemplateSpec) {
			crossNamespace := share("ext-ns-tpl", all)
			crossNamespace.Namespace = SharedNamespace
			c.ResourceSharing = []grovev1alpha1.ResourceSharingSpec{share("int-tpl4", per), crossNamespace}
		}).
		Clique("worker-b", 1, role("role-b"), builders.MinAvailable(1), onAgents("80Mi"), func(c *grovev1alpha1.PodCliqueTemplateSpec) {
			c.ResourceSharing = []grovev1alpha1.ResourceSharingSpec{share("int-tpl6", all)}
		}).
		ScalingGroup("sga", 2, 2, "worker-b").Obj()
	tmpl := &p.Spec.Template
	for _, suffix := range []string{"", "2", "3", "4", "5", "6", "7", "8"} {
		c := grovev1alpha1.ResourceClaimTemplateConfig{Name: "int-tpl" + suffix}
		c.TemplateSpec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "int-dev" + suffix, Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "int-class" + suffix}}}
		tmpl.ResourceClaimTemplates = append(tmpl.ResourceClaimTemplates, c)
	}
	tmpl.ResourceSharing = []grovev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: share("int-tpl5", all)},
		{ResourceSharingSpec: share("ext-tpl", per)},
		{ResourceSharingSpec: share("int-tpl", per), Filter: &grovev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"worker-a"}}},
		{ResourceSharingSpec: share("int-tpl7", all), Filter: &grovev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"sga"}}},
	}
	group(p, "sga").ResourceSharing = []grovev1alpha1.PCSGResourceSharingSpec{
		{ResourceSharingSpec: share("int-tpl2", all)},
		{ResourceSharingSpec: share("int-tpl3", per)},
		{ResourceSharingSpec: share("int-tpl8", all), Filter: &grovev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"worker-b"}}},
	}
	return app(p)
}
