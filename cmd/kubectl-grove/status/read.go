// Package status is `kubectl grove status` and `kubectl grove why`: one read of a workload and
// everything it owns, drawn as a tree, with the one-line reason of whatever waits.
package status

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// View is one read of a PodCliqueSet and what it owns.
type View struct {
	PodCliqueSet *grovev1alpha1.PodCliqueSet
	PodCliques   map[string]*grovev1alpha1.PodClique
	Groups       []*grovev1alpha1.PodCliqueScalingGroup
	PodGangs     map[string]*schedulerv1alpha1.PodGang
	Pods         map[string][]*corev1.Pod // by PodClique
	// Maps are, under Coherent, the replicas' PodGangMaps by replica.
	Maps map[int]*grovev1alpha1.PodGangMap
}

// TrainJobView is one read of a TrainJob and its workload: a PodCliqueSet or a JobSet.
type TrainJobView struct {
	TrainJob *trainerv1alpha1.TrainJob
	// Workload is the PodCliqueSet path's view, nil on the JobSet path or before it exists.
	Workload *View
	JobSet   *jobsetv1alpha2.JobSet
	JobPods  []*corev1.Pod
}

// ReadPodCliqueSet reads a PodCliqueSet and its children by their part-of label.
func ReadPodCliqueSet(ctx context.Context, c client.Reader, key client.ObjectKey) (*View, error) {
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := get(ctx, c, key, pcs, "PodCliqueSet"); err != nil {
		return nil, err
	}
	v := &View{PodCliqueSet: pcs, PodCliques: map[string]*grovev1alpha1.PodClique{}, PodGangs: map[string]*schedulerv1alpha1.PodGang{}, Pods: map[string][]*corev1.Pod{},
		Maps: map[int]*grovev1alpha1.PodGangMap{}}
	sel := []client.ListOption{client.InNamespace(key.Namespace), client.MatchingLabels{grovev1alpha1.LabelPartOf: key.Name}}
	cliques, groups, gangs, pods := &grovev1alpha1.PodCliqueList{}, &grovev1alpha1.PodCliqueScalingGroupList{}, &schedulerv1alpha1.PodGangList{}, &corev1.PodList{}
	maps := &grovev1alpha1.PodGangMapList{}
	for _, l := range []struct {
		list client.ObjectList
		kind string
	}{{cliques, "PodCliques"}, {groups, "PodCliqueScalingGroups"}, {gangs, "PodGangs"}, {pods, "Pods"}, {maps, "PodGangMaps"}} {
		if err := c.List(ctx, l.list, sel...); err != nil {
			return nil, explain(err, l.kind, key.Namespace)
		}
	}
	for i := range cliques.Items {
		if owned(&cliques.Items[i], pcs, groups) {
			v.PodCliques[cliques.Items[i].Name] = &cliques.Items[i]
		}
	}
	for i := range groups.Items {
		if metav1.IsControlledBy(&groups.Items[i], pcs) {
			v.Groups = append(v.Groups, &groups.Items[i])
		}
	}
	sort.Slice(v.Groups, func(i, j int) bool { return v.Groups[i].Name < v.Groups[j].Name })
	for i := range gangs.Items {
		v.PodGangs[gangs.Items[i].Name] = &gangs.Items[i]
	}
	for i := range maps.Items {
		if m := &maps.Items[i]; metav1.IsControlledBy(m, pcs) {
			v.Maps[int(m.Spec.PodCliqueSetReplicaIndex)] = m
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if clique := p.Labels[grovev1alpha1.LabelPodClique]; v.PodCliques[clique] != nil {
			v.Pods[clique] = append(v.Pods[clique], p)
		}
	}
	for _, ps := range v.Pods {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	}
	return v, nil
}

// ReadTrainJob reads a TrainJob and the workload of its name it controls.
func ReadTrainJob(ctx context.Context, c client.Reader, key client.ObjectKey) (*TrainJobView, error) {
	tj := &trainerv1alpha1.TrainJob{}
	if err := get(ctx, c, key, tj, "TrainJob"); err != nil {
		return nil, err
	}
	v := &TrainJobView{TrainJob: tj}
	pcs := &grovev1alpha1.PodCliqueSet{}
	err := c.Get(ctx, key, pcs)
	switch {
	case err == nil && metav1.IsControlledBy(pcs, tj):
		v.Workload, err = ReadPodCliqueSet(ctx, c, key)
		return v, err
	case err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return nil, explain(err, "PodCliqueSets", key.Namespace)
	}
	js := &jobsetv1alpha2.JobSet{}
	err = c.Get(ctx, key, js)
	switch {
	case err == nil && metav1.IsControlledBy(js, tj):
		v.JobSet = js
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: key.Name}); err != nil {
			return nil, explain(err, "Pods", key.Namespace)
		}
		for i := range pods.Items {
			v.JobPods = append(v.JobPods, &pods.Items[i])
		}
		sort.Slice(v.JobPods, func(i, j int) bool { return v.JobPods[i].Name < v.JobPods[j].Name })
	case err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err):
		return nil, explain(err, "JobSets", key.Namespace)
	}
	return v, nil
}

// owned reports whether a PodClique belongs to pcs: controlled by it or by one of its groups.
func owned(pclq *grovev1alpha1.PodClique, pcs *grovev1alpha1.PodCliqueSet, groups *grovev1alpha1.PodCliqueScalingGroupList) bool {
	if metav1.IsControlledBy(pclq, pcs) {
		return true
	}
	for i := range groups.Items {
		if metav1.IsControlledBy(pclq, &groups.Items[i]) && metav1.IsControlledBy(&groups.Items[i], pcs) {
			return true
		}
	}
	return false
}

// get reads one object and turns the API's refusals into what a person can act on.
func get(ctx context.Context, c client.Reader, key client.ObjectKey, obj client.Object, kind string) error {
	err := c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("%s %s/%s does not exist", kind, key.Namespace, key.Name)
	}
	return explain(err, kind+"s", key.Namespace)
}

// explain words a missing CRD and a forbidden read so a person knows what to do.
func explain(err error, resource, namespace string) error {
	switch {
	case err == nil:
		return nil
	case meta.IsNoMatchError(err):
		return fmt.Errorf("this cluster does not serve %s (%v): install the project's CRDs (config/crd) or point --context at a cluster that has them", resource, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not list or get %s in namespace %s: ask for read access to it (RBAC); the API server said: %v", resource, namespace, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the API server does not accept your credentials: %v", err)
	}
	return err
}
