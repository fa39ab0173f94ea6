// Package podcliquescalinggroup is the grove-operator's PodCliqueScalingGroup reconciler: one
// PodClique per member clique per group replica, each joining the base PodGang or its own scaled
// PodGang, and the group's counts in status.
package podcliquescalinggroup

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
	"github.com/kubegrove/grove/controllers/operator/internal/cachesync"
	"github.com/kubegrove/grove/controllers/operator/internal/resourceclaims"
	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
	"github.com/kubegrove/grove/internal/reconcile/terminating"
)

// Reconciler reconciles PodCliqueScalingGroups.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold (external ResourceClaimTemplates); nil
	// means Client.
	APIReader client.Reader
	Recorder  events.EventRecorder

	// Clock tells the time of breaches and update progress; nil means the wall clock.
	Clock clock.PassiveClock

	expectations cachesync.Expectations // PodCliques created that the cache does not show yet
	podSpecs     *children.PodSpecs     // members found at their pod template (a shortcut only)
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquescalinggroups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podgangmaps,verbs=get;list;watch

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	r.expectations.Clock = r.clock()
	r.podSpecs = children.NewPodSpecs()
	return ctrl.NewControllerManagedBy(mgr).
		Named("podcliquescalinggroup").
		For(&grovev1alpha1.PodCliqueScalingGroup{}, builder.WithPredicates(eventbatch.SpecChanged())).
		// Its status summarises the cliques' status: their bursts are batched into one reconcile,
		// but a clique's Ready or updated count changing is what the next step of a rolling
		// update waits for, and is taken promptly; a clique whole again (eventbatch.CliqueWhole), which
		// ends a step, at once.
		Watches(&grovev1alpha1.PodClique{}, eventbatch.EnqueuePromptly(eventbatch.ControllerOf(grovev1alpha1.GroupVersion.String(), "PodCliqueScalingGroup"), eventbatch.Period, eventbatch.Low,
			eventbatch.CliqueProgressed, eventbatch.CliqueWhole, r.clock()),
			builder.WithPredicates(eventbatch.SkipCreate())).
		Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(resourceclaims.Deleted())).
		// Under Coherent the replica's PodGangMap says which group replicas take the template.
		Watches(&grovev1alpha1.PodGangMap{}, handler.EnqueueRequestsFromMapFunc(r.groupsOfReplica)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(requeue.OnTransient(r))
}

// groupsOfReplica maps a PodGangMap to the scaling groups of its PodCliqueSet replica.
func (r *Reconciler) groupsOfReplica(ctx context.Context, obj client.Object) []ctrl.Request {
	pcs, replica := obj.GetLabels()[grovev1alpha1.LabelPartOf], obj.GetLabels()[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
	if pcs == "" || replica == "" {
		return nil
	}
	list := &grovev1alpha1.PodCliqueScalingGroupList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{
		grovev1alpha1.LabelPartOf: pcs, grovev1alpha1.LabelPodCliqueSetReplicaIndex: replica}, client.UnsafeDisableDeepCopy); err != nil { // only names are read
		return nil
	}
	reqs := make([]ctrl.Request, 0, len(list.Items))
	for _, g := range list.Items {
		reqs = append(reqs, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
	}
	return reqs
}

// gangs are, under Coherent, the PodGangs of the group's PodCliqueSet replica as its PodGangMap
// makes them; known is false while the map does not exist.
func (r *Reconciler) gangs(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, pcs string, replica int) ([]coherent.Gang, bool, error) {
	if pcsg.Spec.UpdateStrategy != grovev1alpha1.CoherentStrategy {
		return nil, true, nil
	}
	pgm := &grovev1alpha1.PodGangMap{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcsg.Namespace, Name: grovev1alpha1.PodGangMapName(pcs, replica)}, pgm); err != nil {
		return nil, false, client.IgnoreNotFound(err)
	}
	return coherent.Gangs(pcs, replica, pgm.Spec.Entries), true, nil
}

// Reconcile observes the group's PodCliques once, decides the pass (decideGroup: its breach,
// the group replicas it recycles, the PodCliques to create, update and delete), records the
// recycled replicas before deleting them, acts, and writes the status last.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pcsg, pcs, replica, have, err := r.observe(ctx, req)
	if pcsg == nil || err != nil {
		return ctrl.Result{}, err
	}
	seen := sets.New[string]()
	for name := range have {
		seen.Insert(name)
	}
	unseen := r.expectations.Unseen(pcsg.UID, seen)
	ready, err := r.readyPods(ctx, pcsg, pcs, have)
	if err != nil {
		return ctrl.Result{}, err
	}
	gangs, known, err := r.gangs(ctx, pcsg, pcs.Name, replica)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !known {
		log.FromContext(ctx).V(1).Info("waiting for the replica's PodGangMap")
		return ctrl.Result{}, nil
	}
	p := decideGroup(groupInput{pcs: pcs, pcsg: pcsg, replica: replica, have: have, readyPods: ready, unseen: unseen, gangs: gangs, now: r.clock().Now(), podSpecs: r.podSpecs})
	var errs []error
	if err := r.recycle(ctx, pcsg, &p); err != nil {
		errs = append(errs, err)
	}
	// Claims before the PodCliques whose pods reference them.
	if err := r.syncResourceClaims(ctx, pcs, pcsg); err != nil {
		errs = append(errs, err)
	}
	created, syncErrs := r.applyMembers(ctx, pcsg, &p)
	errs = append(errs, syncErrs...)
	// PodCliques created here, or earlier but not in the cache yet, are not in this pass's view:
	// a pass after the batch period writes the status once with them.
	if created+unseen.Len() > 0 && len(errs) == 0 {
		return eventbatch.StatusPass(), nil
	}
	requeue := p.requeue
	deadline, err := r.updateStatus(ctx, pcsg, have, p.breach, p.recovering)
	if err != nil {
		errs = append(errs, err)
	}
	if deadline > 0 && (requeue == 0 || deadline < requeue) {
		requeue = deadline // the update's progress deadline runs out: report it then
	}
	return ctrl.Result{RequeueAfter: requeue}, errors.Join(errs...)
}

// recycle records the group replicas recycled now in status.recoveringReplicas, then deletes
// their PodCliques; a failed record deletes nothing.
func (r *Reconciler) recycle(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, p *groupPlan) error {
	if len(p.recycle) == 0 {
		return nil
	}
	if p.record {
		updated := pcsg.DeepCopy()
		updated.Status.RecoveringReplicas = p.recovering
		if err := r.Client.Status().Update(ctx, updated); err != nil {
			// Nothing recycled: the replicas recorded before stay the recovering ones.
			p.recycle, p.recovering = nil, p.assessed
			return err
		}
		*pcsg = *updated
		log.FromContext(ctx).V(1).Info("recorded group replicas to recycle", "recoveringReplicas", p.recovering)
	}
	for _, rc := range p.recycle {
		deleted, err := gangtermination.DeletePodCliques(ctx, r.Client, rc.pclqs)
		if err != nil {
			return err
		}
		if deleted {
			log.FromContext(ctx).Info("gang termination: group replica terminated, its PodCliques are recreated", "groupReplica", rc.replica,
				"reason", "a PodClique stayed below minAvailable for longer than terminationDelay", "terminationDelay", p.delay, "healthyReplicas", p.healthy, "minAvailable", p.minAvailable)
			gangtermination.Terminated(gangtermination.LevelPodCliqueScalingGroup)
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, "GangTerminated", "Terminate",
				"replica %s stayed below minAvailable for more than %s: its PodCliques are recreated", rc.replica, p.delay)
		}
	}
	return nil
}

// applyMembers creates the missing PodCliques (in parallel: a scale-out by 50 replicas wants a
// hundred), updates those due for the template and deletes those no group replica wants; it
// returns how many it created.
func (r *Reconciler) applyMembers(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, p *groupPlan) (int, []error) {
	// Updates go side by side: a step updates every member of its group replica, and written
	// one after the other the worker waited for the leader's write (40–67 ms in make bench's
	// Coherent rollout under load) before its pods could be replaced. Each is tried; every
	// error is returned.
	updateErrs := make([]error, len(p.updates))
	g := errgroup.Group{}
	g.SetLimit(slowstart.MaxInFlight)
	for i, u := range p.updates {
		g.Go(func() error {
			updateErrs[i] = r.sync(ctx, pcsg, u, u, p.updateReasons[u.Name])
			return nil
		})
	}
	_ = g.Wait() // the errors are in updateErrs
	errs := slices.DeleteFunc(updateErrs, func(err error) bool { return err == nil })
	var mu sync.Mutex
	var sent []string
	created, err := slowstart.Run(ctx, len(p.creates), func(ctx context.Context, i int) error {
		err := r.sync(ctx, pcsg, p.creates[i], nil, "")
		if err == nil {
			mu.Lock()
			sent = append(sent, p.creates[i].Name)
			mu.Unlock()
		}
		return err
	})
	r.expectations.Expect(pcsg.UID, sent...)
	if err != nil {
		errs = append(errs, err)
	}
	for _, pclq := range p.deletes {
		if err := r.Client.Delete(ctx, pclq, client.Preconditions{UID: ptr.To(pclq.UID)}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
			continue
		}
		log.FromContext(ctx).Info("deleted PodClique", "podClique", klog.KObj(pclq), "reason", "its group replica is beyond spec.replicas or its clique left the group")
	}
	return created, errs
}

// observe reads the group, its PodCliqueSet (for the clique templates), its replica index and
// the PodCliques it controls; a nil group means there is nothing to do.
func (r *Reconciler) observe(ctx context.Context, req ctrl.Request) (*grovev1alpha1.PodCliqueScalingGroup, *grovev1alpha1.PodCliqueSet, int, map[string]*grovev1alpha1.PodClique, error) {
	pcsg := &grovev1alpha1.PodCliqueScalingGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcsg); err != nil || !pcsg.DeletionTimestamp.IsZero() {
		return nil, nil, 0, nil, client.IgnoreNotFound(err)
	}
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: pcsg.Namespace, Name: pcsg.Labels[grovev1alpha1.LabelPartOf]}, pcs); err != nil {
		return nil, nil, 0, nil, client.IgnoreNotFound(err)
	}
	replica, ok := grovev1alpha1.ReplicaIndexOf(pcsg)
	if !ok {
		return nil, nil, 0, nil, nil // not one of ours
	}
	// Read, not copied: a pass copies only a PodClique it writes (children.Updated).
	list := &grovev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pcsg.Namespace), client.MatchingLabels{grovev1alpha1.LabelPodCliqueScalingGroup: pcsg.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, 0, nil, err
	}
	have := map[string]*grovev1alpha1.PodClique{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], pcsg) {
			have[list.Items[i].Name] = &list.Items[i]
		}
	}
	return pcsg, pcs, replica, have, nil
}

// readyPods counts the group's Ready pods that are not being deleted, by PodClique, when the
// rollout must check a status against them (readsPods; nil, and no read, otherwise).
func (r *Reconciler) readyPods(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, pcs *grovev1alpha1.PodCliqueSet, have map[string]*grovev1alpha1.PodClique) (map[string]int32, error) {
	if !readsPods(pcs, pcsg, have) {
		return nil, nil
	}
	list := &corev1.PodList{}
	// The PodCliqueSet's pods by index (not every pod of the namespace), only counted.
	if err := r.Client.List(ctx, list, client.InNamespace(pcsg.Namespace), client.MatchingFields{fieldindex.PodsOfPodCliqueSet: pcs.Name},
		client.MatchingLabels{grovev1alpha1.LabelPodCliqueScalingGroup: pcsg.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	ready := map[string]int32{}
	for i := range list.Items {
		p := &list.Items[i]
		name := p.Labels[grovev1alpha1.LabelPodClique]
		if h := have[name]; h != nil && metav1.IsControlledBy(p, h) && p.DeletionTimestamp.IsZero() &&
			slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
			}) {
			ready[name]++
		}
	}
	return ready, nil
}

// Members builds the group's PodCliques, by name: its own spec says how many group replicas,
// which member cliques and how many replicas form the base gang; the PodCliqueSet's template
// gives each member clique's template. replica is the PodCliqueSet replica the group belongs to.
// kubectl grove renders with it.
func Members(pcs *grovev1alpha1.PodCliqueSet, pcsg *grovev1alpha1.PodCliqueScalingGroup, replica int, gangs []coherent.Gang) map[string]*grovev1alpha1.PodClique {
	want := map[string]*grovev1alpha1.PodClique{}
	config := ""
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name) == pcsg.Name {
			config = g.Name
		}
	}
	if config == "" {
		return want // the group left the template: the PodCliqueSet deletes it
	}
	var templates []*grovev1alpha1.PodCliqueTemplateSpec
	var numPods int32
	for _, clique := range pcsg.Spec.CliqueNames {
		if tmpl := children.Template(pcs, clique); tmpl != nil {
			templates = append(templates, tmpl)
			numPods += tmpl.Spec.Replicas
		}
	}
	minAvailable := int(ptr.Deref(pcsg.Spec.MinAvailable, 1))
	cliques := children.CliquesOf(pcs)
	for j := 0; j < int(pcsg.Spec.Replicas); j++ {
		group := &children.ScalingGroup{Name: pcsg.Name, ConfigName: config, Replica: j, TemplateNumPods: numPods}
		gang := children.PodGangOfGroupReplica(pcs.Name, replica, pcsg.Name, j, minAvailable)
		if pcsg.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy {
			gang = ""
			if g := coherent.GroupReplicaGang(gangs, config, int32(j)); g != nil {
				gang = g.Name
			}
		}
		for _, tmpl := range templates {
			pclq := cliques.PodClique(replica, tmpl, group, gang)
			// The group hands its members the strategy it was given: a PodCliqueSet switched to
			// Coherent reaches them with their gang, in one write, once the group lays them out so.
			pclq.Spec.UpdateStrategy = pcsg.Spec.UpdateStrategy
			pclq.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pcsg, grovev1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"))}
			want[pclq.Name] = pclq
		}
	}
	return want
}

func (r *Reconciler) sync(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, want, have *grovev1alpha1.PodClique, reason string) error {
	if have == nil {
		if terminating.Namespace(ctx, r.Client, want.Namespace) {
			return nil // the namespace controller is removing everything here; a create is refused
		}
		err := r.Client.Create(ctx, want)
		if terminating.Refused(err) {
			log.FromContext(ctx).V(1).Info("namespace is being deleted: PodClique not created", "podClique", klog.KObj(want))
			return nil
		}
		if apierrors.IsAlreadyExists(err) {
			// The cache is behind on our own creation, or another owner holds the name: then it
			// is left alone (never adopted) and the PodCliqueSet reports it (NameCollision).
			log.FromContext(ctx).V(1).Info("PodClique already exists", "podClique", klog.KObj(want))
			return nil
		}
		if err != nil {
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, "CreateFailed", "Create", "creating PodClique %s: %v", want.Name, err)
			return err
		}
		log.FromContext(ctx).Info("created PodClique", "podClique", klog.KObj(want), "podGang", want.Labels[grovev1alpha1.LabelPodGang])
		return nil
	}
	// have is the PodClique brought to the template (decideGroup's update).
	if err := r.Client.Update(ctx, have); err != nil {
		return err
	}
	log.FromContext(ctx).Info("updated PodClique to the template", "podClique", klog.KObj(want), "reason", reason)
	return nil
}

func (r *Reconciler) updateStatus(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, pclqs map[string]*grovev1alpha1.PodClique, breach metav1.Condition, recovering []int32) (time.Duration, error) {
	st := *pcsg.Status.DeepCopy()
	st.RecoveringReplicas = recovering
	st.ObservedGeneration = &pcsg.Generation
	selector := labels.SelectorFromSet(labels.Set{grovev1alpha1.LabelPodCliqueScalingGroup: pcsg.Name}).String()
	st.Selector = &selector
	type counts struct{ members, scheduled, available, updated, realised int }
	perReplica := map[string]*counts{}
	for _, p := range pclqs {
		j := p.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		if idx, err := strconv.Atoi(j); err != nil || idx >= int(pcsg.Spec.Replicas) {
			continue
		}
		c := perReplica[j]
		if c == nil {
			c = &counts{}
			perReplica[j] = c
		}
		c.members++
		min := p.MinAvailableOrReplicas()
		if meta.IsStatusConditionTrue(p.Status.Conditions, grovev1alpha1.ConditionPodCliqueScheduled) {
			c.scheduled++
		}
		if p.Status.ReadyReplicas >= min {
			c.available++
		}
		if p.Status.UpdatedReplicas == p.Spec.Replicas {
			c.updated++
		}
		if realised(p, pcsg.Spec.PodCliqueSetGenerationHash) {
			c.realised++
		}
	}
	st.Replicas, st.ScheduledReplicas, st.AvailableReplicas, st.UpdatedReplicas = int32(len(perReplica)), 0, 0, 0
	members := len(pcsg.Spec.CliqueNames)
	for _, c := range perReplica {
		if c.scheduled == members {
			st.ScheduledReplicas++
		}
		if c.available == members {
			st.AvailableReplicas++
		}
		if c.updated == members {
			st.UpdatedReplicas++
		}
	}
	realisedPerReplica := make([]int, pcsg.Spec.Replicas)
	for j, c := range perReplica {
		if idx, err := strconv.Atoi(j); err == nil {
			realisedPerReplica[idx] = c.realised
		}
	}
	now := metav1.NewTime(r.clock().Now())
	trackUpdate(&st, &pcsg.Spec, realisedPerReplica, st.AvailableReplicas == pcsg.Spec.Replicas, now)
	var updatedBefore int32
	if p := pcsg.Status.UpdateProgress; p != nil && st.UpdateProgress != nil && p.PodCliqueSetGenerationHash == st.UpdateProgress.PodCliqueSetGenerationHash {
		updatedBefore = p.UpdatedPodCliquesCount
	}
	after := trackProgress(&st, pcsg, updatedBefore, now)
	meta.SetStatusCondition(&st.Conditions, breach)
	if equality.Semantic.DeepEqual(st, pcsg.Status) {
		return after, nil
	}
	before := pcsg.Status.Conditions
	pcsg.Status = st
	if err := r.Client.Status().Update(ctx, pcsg); err != nil {
		return 0, err
	}
	conditionlog.Transitions(log.FromContext(ctx), before, st.Conditions)
	if c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress); c != nil && c.Reason == grovev1alpha1.ReasonProgressDeadlineExceeded {
		if o := meta.FindStatusCondition(before, grovev1alpha1.ConditionUpdateInProgress); o == nil || o.Reason != c.Reason {
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, grovev1alpha1.ReasonProgressDeadlineExceeded, "Update", "%s", c.Message)
		}
	}
	return after, nil
}

// realised tells whether a PodClique is at the template revision hash and all its pods run it.
// Its status must describe its spec: just handed the new revision, it still counts the old
// template's pods as updated, and the update would end before a pod was replaced.
func realised(p *grovev1alpha1.PodClique, hash string) bool {
	return hash != "" && p.Spec.PodCliqueSetGenerationHash == hash &&
		ptr.Deref(p.Status.ObservedGeneration, -1) == p.Generation &&
		p.Status.UpdatedReplicas == p.Spec.Replicas && p.Status.Replicas == p.Spec.Replicas
}

// trackUpdate keeps currentPodCliqueSetGenerationHash and updateProgress (upstream Grove's
// fields): realised[j] is how many PodCliques of group replica j run the spec's revision. The
// group's first revision is realised without an update; a later one opens an update, which ends
// once every PodClique runs it and every replica is available again (at once with OnDelete, where
// users replace the pods). now is written only when an update starts or ends, so a resync at rest
// writes nothing.
func trackUpdate(st *grovev1alpha1.PodCliqueScalingGroupStatus, spec *grovev1alpha1.PodCliqueScalingGroupSpec, realised []int, allAvailable bool, now metav1.Time) {
	target := spec.PodCliqueSetGenerationHash
	if target == "" {
		return
	}
	members := len(spec.CliqueNames)
	total, updated := int32(len(realised)*members), int32(0)
	var completed []int32
	current := int32(-1)
	for j, n := range realised {
		updated += int32(n)
		if n == members {
			completed = append(completed, int32(j))
		} else if current < 0 {
			current = int32(j)
		}
	}
	done := updated == total && allAvailable
	prev := st.CurrentPodCliqueSetGenerationHash
	if prev == nil && updated == total {
		st.CurrentPodCliqueSetGenerationHash = ptr.To(target) // the group's first revision: no update
		return
	}
	switch {
	case prev != nil && *prev == target && (st.UpdateProgress == nil || st.UpdateProgress.PodCliqueSetGenerationHash == target):
		// at rest on the realised revision; a scale-out's new PodCliques are no update
		if p := st.UpdateProgress; p != nil && p.UpdateEndedAt != nil {
			p.UpdatedPodCliquesCount, p.TotalPodCliquesCount = updated, total
		}
		return
	case prev == nil:
		return
	}
	p := st.UpdateProgress
	if p == nil || p.PodCliqueSetGenerationHash != target {
		p = &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: target}
		if spec.UpdateStrategy == grovev1alpha1.OnDeleteStrategy {
			p.UpdateEndedAt = &p.UpdateStartedAt // nothing for the operator to do: users delete the pods
		}
		st.UpdateProgress = p
	}
	p.UpdatedPodCliquesCount, p.TotalPodCliquesCount = updated, total
	p.ReadyReplicaIndicesSelectedToUpdate = nil
	if spec.UpdateStrategy != grovev1alpha1.OnDeleteStrategy && !done && current >= 0 {
		p.ReadyReplicaIndicesSelectedToUpdate = &grovev1alpha1.PodCliqueScalingGroupReplicaUpdateProgress{Current: current, Completed: completed}
	}
	if done {
		if p.UpdateEndedAt == nil {
			p.UpdateEndedAt = &now
		}
		st.CurrentPodCliqueSetGenerationHash = ptr.To(target)
	}
}

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get

// syncResourceClaims keeps the group's claims of its scaling group's resourceSharing: one per
// AllReplicas entry, one per group replica per PerReplica entry (a group replica scaled away
// loses its claims), owned by the group so they go with it.
func (r *Reconciler) syncResourceClaims(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, pcsg *grovev1alpha1.PodCliqueScalingGroup) error {
	var entries []grovev1alpha1.ResourceSharingSpec
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replicaOf(pcsg), g.Name) != pcsg.Name {
			continue
		}
		for _, e := range g.ResourceSharing {
			entries = append(entries, e.ResourceSharingSpec)
		}
	}
	k := resourceclaims.Keeper{Client: r.Client, Reader: r.APIReader, Recorder: r.Recorder}
	return k.Keep(ctx, pcsg, grovev1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"), pcs.Name, entries, int(pcsg.Spec.Replicas), pcs.Spec.Template.ResourceClaimTemplates)
}

// replicaOf is the PodCliqueSet replica a group belongs to (-1 when its label is missing).
func replicaOf(pcsg *grovev1alpha1.PodCliqueScalingGroup) int {
	if i, ok := grovev1alpha1.ReplicaIndexOf(pcsg); ok {
		return i
	}
	return -1
}
