package status

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/golden"
)

// Messages of the backend-controller's Dispatched conditions on a manager's gangs.
const (
	awaitingWorker = "waiting for MultiKueue to place the gang on a worker cluster"
	leftWorker     = "left cluster worker-1: Kueue evicted it (Preempted: preempted by a higher priority workload); it waits to be placed on a worker again"
)

// dispatchedPCS is a Training PodCliqueSet of two replicas that grove-webhook marked for
// MultiKueue on the manager cluster.
func dispatchedPCS() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "train").Replicas(2).Training(3).Clique("node", 2).
		Label(grovev1alpha1.LabelKueueQueueName, "team-a").ManagedBy(grovev1alpha1.ManagedByMultiKueue).Obj()
}

// managerGang is the manager's gang of replica i of dispatchedPCS, first or placed after the
// first, with its Dispatched condition ("" reason for none).
func managerGang(i string, status metav1.ConditionStatus, reason, message string) *schedulerv1alpha1.PodGang {
	placedAfter := ""
	if i != "0" {
		placedAfter = "train-0"
	}
	b := builders.PodGang("ns", "train-"+i).OfReplica("train", i).Queue("team-a").ControlledBy(dispatchedPCS(), "PodCliqueSet").
		PodGroup("train-"+i+"-node", 2).MultiKueue(schedulerv1alpha1.MultiKueueManager, placedAfter)
	if reason != "" {
		b.ConditionMessage(schedulerv1alpha1.ConditionDispatched, status, reason, message)
	}
	return b.Obj()
}

func onWorker(i, cluster string) *schedulerv1alpha1.PodGang {
	return managerGang(i, metav1.ConditionTrue, schedulerv1alpha1.ReasonRunsOnWorker, schedulerv1alpha1.RunsOnWorkerMessage(cluster))
}

// admitted adds Kueue's admission of the gang's Workload on the manager.
func admitted(pg *schedulerv1alpha1.PodGang) *schedulerv1alpha1.PodGang {
	pg.Status.Conditions = append(pg.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionTrue,
		Reason: schedulerv1alpha1.ReasonQueueAdmitted, Message: "quota reserved in ClusterQueue multikueue"})
	return pg
}

func gangsOf(gangs ...*schedulerv1alpha1.PodGang) map[string]*schedulerv1alpha1.PodGang {
	m := map[string]*schedulerv1alpha1.PodGang{}
	for _, g := range gangs {
		m[g.Name] = g
	}
	return m
}

func TestTheManagersStatusSaysWhichWorkerRunsADispatchedPodCliqueSetOrWhyNone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pcs   *grovev1alpha1.PodCliqueSet
		gangs map[string]*schedulerv1alpha1.PodGang
		want  string
	}{
		{"not dispatched: no line", builders.PodCliqueSet("ns", "train").Obj(), gangsOf(onWorker("0", "worker-1")), ""},
		{"no gangs yet", dispatchedPCS(), nil,
			"dispatched by MultiKueue, on no worker yet: its gangs are not created (is the grove-operator running?)"},
		{"every gang on one worker", dispatchedPCS(), gangsOf(onWorker("0", "worker-1"), onWorker("1", "worker-1")),
			"dispatched by MultiKueue: runs on cluster worker-1 (status copied back from there)"},
		{"gangs split between workers: both named, sorted", dispatchedPCS(), gangsOf(onWorker("0", "worker-2"), onWorker("1", "worker-1")),
			"dispatched by MultiKueue: runs on cluster worker-1, worker-2 (status copied back from there)"},
		{"the first gang placed, a later one waiting", dispatchedPCS(), gangsOf(onWorker("0", "worker-1"),
			managerGang("1", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingWorker, awaitingWorker)),
			"dispatched by MultiKueue: runs on cluster worker-1; gang train-1 " + awaitingWorker + " (AwaitingWorker)"},
		{"gangs split between workers, one waiting", dispatchedPCS(), gangsOf(onWorker("0", "worker-2"), onWorker("1", "worker-1"),
			managerGang("2", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingWorker, awaitingWorker)),
			"dispatched by MultiKueue: runs on cluster worker-1, worker-2; gang train-2 " + awaitingWorker + " (AwaitingWorker)"},
		{"no worker has admitted the first gang; the later one waits for it", dispatchedPCS(), gangsOf(
			managerGang("0", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingWorker, awaitingWorker+": no worker has room (Pending)"),
			managerGang("1", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingFirstGang, "the gang's Workload is created once gang train-0 is placed on a worker cluster")),
			"dispatched by MultiKueue, on no worker yet: gang train-0 " + awaitingWorker + ": no worker has room (Pending) (AwaitingWorker)"},
		{"a gang left its worker", dispatchedPCS(), gangsOf(
			managerGang("0", metav1.ConditionFalse, schedulerv1alpha1.ReasonLeftWorker, leftWorker),
			managerGang("1", metav1.ConditionFalse, schedulerv1alpha1.ReasonLeftWorker, leftWorker)),
			"dispatched by MultiKueue, on no worker yet: gang train-0 " + leftWorker + " (LeftWorker)"},
		{"a gang without a Dispatched condition: no backend-controller answered", dispatchedPCS(), gangsOf(managerGang("0", "", "", "")),
			"dispatched by MultiKueue, on no worker yet: gang train-0 has no Workload yet (is a backend-controller with kueue.enabled running?)"},
		{"a missing Workload outweighs a gang waiting for a worker", dispatchedPCS(), gangsOf(
			managerGang("0", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingWorker, awaitingWorker), managerGang("1", "", "", "")),
			"dispatched by MultiKueue, on no worker yet: gang train-1 has no Workload yet (is a backend-controller with kueue.enabled running?)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dispatchLine(&View{PodCliqueSet: tc.pcs, PodGangs: tc.gangs}))
		})
	}
}

func TestAManagersGangSaysItsWorkloadIsDispatchedWithItsDispatchedAndQueueAdmittedConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		pg   *schedulerv1alpha1.PodGang
		want string
	}{
		{"placed and admitted", admitted(onWorker("0", "worker-1")),
			"PodGang train-0 (its Workload dispatched by MultiKueue); Dispatched=True (RunsOnWorker): MultiKueue placed the gang on cluster worker-1; " +
				"QueueAdmitted=True (Admitted): quota reserved in ClusterQueue multikueue"},
		{"waiting for the first gang", managerGang("1", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingFirstGang, "created once gang train-0 is placed"),
			"PodGang train-1 (its Workload dispatched by MultiKueue); Dispatched=False (AwaitingFirstGang): created once gang train-0 is placed"},
		{"left its worker", managerGang("0", metav1.ConditionFalse, schedulerv1alpha1.ReasonLeftWorker, leftWorker),
			"PodGang train-0 (its Workload dispatched by MultiKueue); Dispatched=False (LeftWorker): " + leftWorker},
		{"no condition yet: no backend line, no acknowledgement asked", managerGang("0", "", "", ""),
			"PodGang train-0 (its Workload dispatched by MultiKueue)"},
		{"a worker's gang is drawn as any gang", builders.PodGang("ns", "train-0").Backend("kube-scheduler").MultiKueue(schedulerv1alpha1.MultiKueueWorker, "").Obj(),
			`PodGang train-0: phase unknown, backend kube-scheduler: not acknowledged: no backend-controller for "kube-scheduler" has answered (is one running?)`},
		{"a gang without MultiKueue is drawn as any gang", builders.PodGang("ns", "train-0").Backend("kube-scheduler").Generation(1).Acknowledged().Obj(),
			"PodGang train-0: phase unknown, backend kube-scheduler: acknowledged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, gangLine(tc.pg))
		})
	}
}

// The manager's whole tree, read as kubectl grove status reads it: the PodCliqueSet's status is
// the worker's, copied back; its replicas have gangs only.
func TestStatusOfADispatchedPodCliqueSetOnTheManager(t *testing.T) {
	placed := dispatchedPCS()
	placed.Status = grovev1alpha1.PodCliqueSetStatus{AvailableReplicas: 2, Phase: grovev1alpha1.PodCliqueSetPhaseRunning, Conditions: []metav1.Condition{{
		Type: grovev1alpha1.ConditionDispatched, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonRunsOnWorker, LastTransitionTime: at,
		Message: `runs on cluster worker-1, dispatched by Kueue's MultiKueue (origin "multikueue")`}}}
	for _, tc := range []struct {
		name, golden string
		objs         []client.Object
		wantLine     string
	}{
		{"placed on a worker", "status-multikueue-placed.txt",
			[]client.Object{placed, admitted(onWorker("0", "worker-1")), admitted(onWorker("1", "worker-1"))},
			"dispatched by MultiKueue: runs on cluster worker-1 (status copied back from there)"},
		{"on no worker yet", "status-multikueue-waiting.txt", []client.Object{dispatchedPCS(),
			managerGang("0", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingWorker, awaitingWorker),
			managerGang("1", metav1.ConditionFalse, schedulerv1alpha1.ReasonAwaitingFirstGang, "the gang's Workload is created once gang train-0 is placed on a worker cluster")},
			"dispatched by MultiKueue, on no worker yet: gang train-0 " + awaitingWorker + " (AwaitingWorker)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCluster(t, interceptor.Funcs{}, tc.objs...)
			v, err := ReadPodCliqueSet(context.Background(), c, client.ObjectKey{Namespace: "ns", Name: "train"})
			require.NoError(t, err)
			var out bytes.Buffer
			PrintPodCliqueSet(&out, v)
			golden.Check(t, tc.golden, out.Bytes())
			assert.Contains(t, out.String(), tc.wantLine)
			assert.NotContains(t, out.String(), "nothing created yet", "a replica with gangs only has something")
			assert.NotContains(t, out.String(), "not acknowledged", "the manager's gangs have no backend to acknowledge them")
		})
	}
}

func TestADispatchedTrainJobOnTheManagerPointsAtItsWorker(t *testing.T) {
	running := metav1.Condition{Type: trainerv1alpha1.TrainJobRunning, Status: metav1.ConditionTrue, Reason: "PodCliqueSetCreated",
		Message: "PodCliqueSet job runs the job", LastTransitionTime: at}
	dispatched := metav1.Condition{Type: grovev1alpha1.ConditionDispatched, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonRunsOnWorker,
		Message: `runs on cluster worker-1, dispatched by Kueue's MultiKueue (origin "multikueue")`, LastTransitionTime: at}
	job := func(managedBy string, conds ...metav1.Condition) *trainerv1alpha1.TrainJob {
		b := builders.TrainJob("ns", "job", "rt").Queue("team-a", "")
		if managedBy != "" {
			b.ManagedBy(managedBy)
		}
		for _, c := range conds {
			b.Condition(c)
		}
		return b.Obj()
	}
	for _, tc := range []struct {
		name string
		tj   *trainerv1alpha1.TrainJob
		want string
	}{
		{"queued: on no worker yet", job(trainerv1alpha1.MultiKueueManagedBy), `TrainJob ns/job: Pending
└── dispatched by MultiKueue, on no worker yet: Kueue's MultiKueue creates its copy on the worker cluster that admits it
`},
		{"running on a worker: its status copied back names it", job(trainerv1alpha1.MultiKueueManagedBy, running, dispatched), `TrainJob ns/job: Running
├── Running=True (PodCliqueSetCreated): PodCliqueSet job runs the job
├── Dispatched=True (RunsOnWorker): runs on cluster worker-1, dispatched by Kueue's MultiKueue (origin "multikueue")
└── dispatched by MultiKueue: its workload runs on the worker cluster (Dispatched above); run this command there for its pods
`},
		{"Dispatched not True: on no worker yet", job(trainerv1alpha1.MultiKueueManagedBy, metav1.Condition{Type: grovev1alpha1.ConditionDispatched,
			Status: metav1.ConditionFalse, Reason: "Evicted", Message: "left cluster worker-1", LastTransitionTime: at}), `TrainJob ns/job: Pending
├── Dispatched=False (Evicted): left cluster worker-1
└── dispatched by MultiKueue, on no worker yet: Kueue's MultiKueue creates its copy on the worker cluster that admits it
`},
		{"not dispatched: the trainer-controller's", job(""), `TrainJob ns/job: Pending
└── no workload: the trainer-controller has not created it (see Running above)
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCluster(t, interceptor.Funcs{}, tc.tj)
			v, err := ReadTrainJob(context.Background(), c, client.ObjectKey{Namespace: "ns", Name: "job"})
			require.NoError(t, err)
			var out bytes.Buffer
			PrintTrainJob(&out, v)
			assert.Equal(t, tc.want, out.String())
		})
	}
}
