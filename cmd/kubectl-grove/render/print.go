package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/tree"
)

// PrintTree writes each workload as a tree: replicas, their Service, PodCliques with their pods
// (name, hostname, scheduler, gates, Grove's environment), scaling groups, PodGangs with their pod
// groups, topology and the backend's objects, and autoscalers.
func PrintTree(w io.Writer, workloads []*Workload) {
	for i, wl := range workloads {
		if i > 0 {
			fmt.Fprintln(w)
		}
		root := tree.New(fmt.Sprintf("%s %s/%s", kindOf(wl.Source), wl.Source.GetNamespace(), wl.Source.GetName()))
		for _, warning := range wl.Warnings {
			root.Add("warning: " + warning)
		}
		if wl.Rejected != nil {
			root.Add("rejected: " + wl.Rejected.Error())
		}
		if wl.Unrenderable != nil {
			root.Add("not rendered: " + wl.Unrenderable.Error())
		}
		if wl.Failed() != nil {
			root.Write(w)
			continue
		}
		for _, obj := range wl.Extra {
			root.Add(fmt.Sprintf("%s %s (created first by the trainer-controller)", kindOf(obj), obj.GetName()))
		}
		if wl.JobSet != nil {
			js := root.Add(fmt.Sprintf("JobSet %s", wl.JobSet.Name))
			for _, rj := range wl.JobSet.Spec.ReplicatedJobs {
				js.Add(fmt.Sprintf("replicatedJob %s: %d × Job of %d pods (parallelism %d)", rj.Name, rj.Replicas,
					ptr.Deref(rj.Template.Spec.Completions, 1), ptr.Deref(rj.Template.Spec.Parallelism, 1)))
			}
		}
		if wl.PodCliqueSet != nil {
			printPodCliqueSet(root, wl)
		}
		root.Write(w)
	}
}

func printPodCliqueSet(root *tree.Node, wl *Workload) {
	pcs := wl.PodCliqueSet
	n := root
	if kindOf(wl.Source) != "PodCliqueSet" {
		n = root.Add(fmt.Sprintf("PodCliqueSet %s", pcs.Name))
	}
	backend := "none enabled"
	if wl.Backend != nil {
		backend = string(wl.Backend.Name())
	}
	n.Add(fmt.Sprintf("workloadType %s, backend %s", pcs.Spec.WorkloadType, backend))
	n.Add(updateStrategyLine(pcs))
	for _, d := range wl.MissingDomains {
		n.Add(fmt.Sprintf("warning: topology domain %s is not in the ClusterTopologyBinding: its constraints are left out", d))
	}
	for replica := range int(pcs.Spec.Replicas) {
		r := n.Add(fmt.Sprintf("replica %d", replica))
		idx := strconv.Itoa(replica)
		for _, svc := range wl.Services {
			if svc.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx {
				r.Add(fmt.Sprintf("Service %s (headless, publishNotReadyAddresses %t)", svc.Name, svc.Spec.PublishNotReadyAddresses))
			}
		}
		for _, pclq := range wl.PodCliques {
			if pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx && pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == "" {
				printPodClique(r, pclq, wl.Pods[pclq.Name])
			}
		}
		for _, pcsg := range wl.ScalingGroups {
			if pcsg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx {
				g := r.Add(fmt.Sprintf("PodCliqueScalingGroup %s: %d replicas, minAvailable %d, cliques %s", pcsg.Name, pcsg.Spec.Replicas,
					ptr.Deref(pcsg.Spec.MinAvailable, 1), strings.Join(pcsg.Spec.CliqueNames, ", ")))
				for _, pclq := range wl.PodCliques {
					if pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == pcsg.Name {
						printPodClique(g, pclq, wl.Pods[pclq.Name])
					}
				}
			}
		}
		for _, pg := range wl.PodGangs {
			if pg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx {
				printPodGang(r, pg, wl.SchedulerObjects[pg.Name])
			}
		}
		for _, hpa := range wl.Autoscalers {
			if hpa.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx {
				r.Add(fmt.Sprintf("HorizontalPodAutoscaler %s: %s %s, %d–%d replicas", hpa.Name, hpa.Spec.ScaleTargetRef.Kind,
					hpa.Spec.ScaleTargetRef.Name, ptr.Deref(hpa.Spec.MinReplicas, 1), hpa.Spec.MaxReplicas))
			}
		}
	}
}

func printPodClique(parent *tree.Node, pclq *grovev1alpha1.PodClique, pods []*corev1.Pod) {
	line := fmt.Sprintf("PodClique %s: role %s, %d pods, minAvailable %d", pclq.Name, pclq.Spec.RoleName, pclq.Spec.Replicas, ptr.Deref(pclq.Spec.MinAvailable, pclq.Spec.Replicas))
	if len(pclq.Spec.StartsAfter) > 0 {
		line += ", starts after " + strings.Join(pclq.Spec.StartsAfter, ", ")
	}
	if len(pclq.Spec.StartsAfterSucceeded) > 0 {
		line += " (succeeded: " + strings.Join(pclq.Spec.StartsAfterSucceeded, ", ") + ")"
	}
	if pclq.Spec.Replicas == 0 {
		line += ", idle: no pod group in its gang, never breached, holds back nobody"
	}
	c := parent.Add(line)
	if len(pods) == 0 {
		if pclq.Spec.Replicas > 0 {
			c.Add(fmt.Sprintf("no pods: no enabled scheduler backend serves schedulerName %q", pclq.Spec.PodSpec.SchedulerName))
		}
		return
	}
	for _, pod := range pods {
		var gates []string
		for _, g := range pod.Spec.SchedulingGates {
			gates = append(gates, g.Name)
		}
		born := "born schedulable once its PodGang is acknowledged"
		if len(gates) > 0 {
			born = "born gated (" + strings.Join(gates, ", ") + ") until its parents are up"
		}
		if pod.Annotations[grovev1alpha1.AnnotationStartupGate] == grovev1alpha1.StartupGateWaiting {
			born += ", placed with its gang and held at start by " + grovev1alpha1.StartupWaitContainer + " until its parents are up"
		}
		scheduler := pod.Spec.SchedulerName
		if g := pod.Spec.SchedulingGroup; g != nil && g.PodGroupName != nil {
			scheduler += " (PodGroup " + *g.PodGroupName + ")"
		}
		p := c.Add(fmt.Sprintf("pod %s: hostname %s.%s, scheduler %s, %s", pod.Name, pod.Spec.Hostname, pod.Spec.Subdomain,
			scheduler, born))
		var env []string
		if len(pod.Spec.Containers) > 0 {
			for _, e := range pod.Spec.Containers[0].Env {
				value := e.Value
				if f := e.ValueFrom; f != nil && f.FieldRef != nil {
					value = "<" + f.FieldRef.FieldPath + ">"
					if key, ok := strings.CutPrefix(f.FieldRef.FieldPath, "metadata.labels['"); ok {
						value = pod.Labels[strings.TrimSuffix(key, "']")] + " (label)"
					}
				} else if f != nil {
					value = "<from a reference>"
				}
				env = append(env, e.Name+"="+value)
			}
		}
		if len(env) > 0 {
			p.Add("env " + strings.Join(env, " "))
		}
	}
}

func printPodGang(parent *tree.Node, pg *schedulerv1alpha1.PodGang, objs []client.Object) {
	g := parent.Add(fmt.Sprintf("PodGang %s: %d pods needed to start", pg.Name, pg.Spec.MinMember()))
	if tc := pg.Spec.TopologyConstraint; tc != nil && tc.PackConstraint != nil {
		g.Add("topology " + pack(tc))
	}
	for _, pgr := range pg.Spec.PodGroups {
		line := fmt.Sprintf("pod group %s: minReplicas %d of %d", pgr.Name, pgr.MinReplicas, len(pgr.PodReferences))
		if pgr.TopologyConstraint != nil && pgr.TopologyConstraint.PackConstraint != nil {
			line += ", topology " + pack(pgr.TopologyConstraint)
		}
		g.Add(line)
	}
	for _, cfg := range pg.Spec.TopologyConstraintGroupConfigs {
		g.Add(fmt.Sprintf("topology group %s (%s): %s", cfg.Name, strings.Join(cfg.PodGroupNames, ", "), pack(cfg.TopologyConstraint)))
	}
	if len(objs) == 0 {
		g.Add(fmt.Sprintf("scheduler objects: none (backend %s)", pg.Labels[grovev1alpha1.LabelSchedulerName]))
	}
	for _, o := range objs {
		g.Add(fmt.Sprintf("scheduler object %s %s%s", kindOf(o), o.GetName(), summary(o)))
	}
}

// summary is what a scheduler object asks its scheduler for.
func summary(o client.Object) string {
	switch o := o.(type) {
	case *kaiv2alpha2.PodGroup:
		s := fmt.Sprintf(": queue %s, minMember %d, %d subgroups", o.Spec.Queue, ptr.Deref(o.Spec.MinMember, 0), len(o.Spec.SubGroups))
		if tc := o.Spec.TopologyConstraint; tc != nil && tc.Topology != "" {
			s += ", topology " + tc.Topology
		}
		return s
	case *schedv1alpha1.PodGroup:
		return fmt.Sprintf(": minMember %d, minResources %s", o.Spec.MinMember, resourceList(o.Spec.MinResources))
	case *volcanov1beta1.PodGroup:
		var minResources corev1.ResourceList
		if o.Spec.MinResources != nil {
			minResources = *o.Spec.MinResources
		}
		return fmt.Sprintf(": queue %s, minMember %d, minResources %s, %d subgroups", o.Spec.Queue, o.Spec.MinMember, resourceList(minResources), len(o.Spec.SubGroupPolicy))
	case *schedulingv1beta1.Workload:
		var parts []string
		for _, t := range o.Spec.PodGroupTemplates {
			if t.SchedulingPolicy.Gang != nil {
				parts = append(parts, fmt.Sprintf("template %s: gang of %d", t.Name, t.SchedulingPolicy.Gang.MinCount))
			}
		}
		for _, t := range o.Spec.CompositePodGroupTemplates {
			parts = append(parts, fmt.Sprintf("composite template %s: %d pod group templates", t.Name, countTemplates(t)))
		}
		return ": " + strings.Join(parts, "; ")
	case *schedulingv1alpha3.CompositePodGroup:
		var keys []string
		if c := o.Spec.SchedulingConstraints; c != nil {
			for _, t := range c.Topology {
				keys = append(keys, t.Key)
			}
		}
		return groupSummary(fmt.Sprintf("all of %d groups", ptr.Deref(o.Spec.SchedulingPolicy.Gang, schedulingv1alpha3.CompositeGangSchedulingPolicy{}).MinGroupCount),
			keys, o.Spec.ParentCompositePodGroupName)
	case *schedulingv1beta1.PodGroup:
		var keys []string
		if c := o.Spec.SchedulingConstraints; c != nil {
			for _, t := range c.Topology {
				keys = append(keys, t.Key)
			}
		}
		return groupSummary(fmt.Sprintf("gang of %d", ptr.Deref(o.Spec.SchedulingPolicy.Gang, schedulingv1beta1.GangSchedulingPolicy{}).MinCount),
			keys, o.Spec.ParentCompositePodGroupName)
	}
	return ""
}

// groupSummary is a Workload API group's minimum, pack keys and parent composite.
func groupSummary(minimum string, keys []string, parent *string) string {
	s := ": " + minimum
	for _, k := range keys {
		s += ", pack " + k
	}
	if parent != nil {
		s += ", in " + *parent
	}
	return s
}

// countTemplates counts the pod group templates under a composite template.
func countTemplates(t schedulingv1beta1.CompositePodGroupTemplate) int {
	n := len(t.PodGroupTemplates)
	for _, c := range t.CompositePodGroupTemplates {
		n += countTemplates(c)
	}
	return n
}

func resourceList(rl corev1.ResourceList) string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(rl)) {
		q := rl[n]
		parts = append(parts, string(n)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

func pack(tc *schedulerv1alpha1.TopologyConstraint) string {
	var parts []string
	if r := tc.PackConstraint.Required; r != nil {
		parts = append(parts, "required "+*r)
	}
	if p := tc.PackConstraint.Preferred; p != nil {
		parts = append(parts, "preferred "+*p)
	}
	return strings.Join(parts, ", ")
}

// Objects lists everything a workload becomes, in the order the binaries create it.
func Objects(wl *Workload) []client.Object {
	var out []client.Object
	out = append(out, wl.Extra...)
	if wl.JobSet != nil {
		out = append(out, wl.JobSet)
	}
	if wl.PodCliqueSet == nil {
		return out
	}
	if kindOf(wl.Source) != "PodCliqueSet" {
		out = append(out, wl.PodCliqueSet)
	}
	for _, o := range wl.Services {
		out = append(out, o)
	}
	for _, o := range wl.ScalingGroups {
		out = append(out, o)
	}
	for _, o := range wl.PodCliques {
		out = append(out, o)
	}
	for _, o := range wl.PodGangs {
		out = append(out, o)
		out = append(out, wl.SchedulerObjects[o.Name]...)
	}
	for _, o := range wl.Autoscalers {
		out = append(out, o)
	}
	for _, name := range slices.Sorted(maps.Keys(wl.Pods)) {
		for _, p := range wl.Pods[name] {
			out = append(out, p)
		}
	}
	return out
}

// PrintYAML writes every object of every workload as YAML documents with apiVersion and kind; a
// rejected workload is an error.
func PrintYAML(w io.Writer, workloads []*Workload) error {
	scheme := Scheme()
	for _, wl := range workloads {
		if err := wl.Failed(); err != nil {
			return fmt.Errorf("%s %s: %w", kindOf(wl.Source), wl.Source.GetName(), err)
		}
		for _, obj := range Objects(wl) {
			obj = obj.DeepCopyObject().(client.Object)
			gvk, err := apiutil.GVKForObject(obj, scheme)
			if err != nil {
				return err
			}
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return err
			}
			// What the API server and the controllers fill in later is not rendered.
			unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
			delete(u, "status")
			data, err := yaml.Marshal(u)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "---\n%s", data)
		}
	}
	return nil
}

// kindOf names an object's kind from the scheme (typed objects carry none).
func kindOf(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	gvk, err := apiutil.GVKForObject(obj, schemeForKinds)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	return gvk.Kind
}

var schemeForKinds = Scheme()

// updateStrategyLine says how a template change is rolled out, with each component's budget.
func updateStrategyLine(pcs *grovev1alpha1.PodCliqueSet) string {
	strategy := grovev1alpha1.RollingRecreateStrategy
	if pcs.Spec.UpdateStrategy != nil && pcs.Spec.UpdateStrategy.Type != "" {
		strategy = pcs.Spec.UpdateStrategy.Type
	}
	if strategy == grovev1alpha1.OnDeleteStrategy {
		return "updateStrategy OnDelete: pods are replaced as they are deleted"
	}
	var budgets []string
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.RollingUpdate != nil && c.RollingUpdate.MaxUnavailable != nil {
			budgets = append(budgets, fmt.Sprintf("%s %d pods", c.Name, *c.RollingUpdate.MaxUnavailable))
		}
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.RollingUpdate != nil && g.RollingUpdate.MaxUnavailable != nil {
			budgets = append(budgets, fmt.Sprintf("%s %d replicas", g.Name, *g.RollingUpdate.MaxUnavailable))
		}
	}
	line := fmt.Sprintf("updateStrategy %s, maxUnavailable: %s", strategy, strings.Join(budgets, ", "))
	if strategy == grovev1alpha1.CoherentStrategy {
		line += "; the changed components are replaced together, one minAvailable unit at a time, one replica at a time"
	}
	return line
}
