// Package volcanoqueue says whether Volcano would schedule a gang from a queue, for the volcano
// scheduler backend (at sync and at PodCliqueSet admission) and grove-webhook's TrainJob rules
// (a runtime's Volcano PodGroup on the JobSet path, where no backend is involved), so all of them
// agree on what an unusable queue is.
package volcanoqueue

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Default is the queue of gangs that name none: the one Volcano creates.
const Default = "default"

// State is what Volcano would do with a gang from a queue.
type State int

const (
	// Usable: the queue exists and is open (or Volcano has not reported its state yet).
	Usable State = iota
	// Missing: no queue of that name.
	Missing
	// NotServed: Volcano's Queue kind is not served (Volcano is not installed).
	NotServed
	// NotOpen: the queue is closed or closing.
	NotOpen
)

// Check says whether Volcano would ever schedule a gang from queue and, when it would not,
// why in words; err is a failed read.
func Check(ctx context.Context, r client.Reader, queue string) (State, string, error) {
	q := &volcanov1beta1.Queue{}
	err := r.Get(ctx, client.ObjectKey{Name: queue}, q)
	switch {
	case apierrors.IsNotFound(err):
		return Missing, fmt.Sprintf("Volcano queue %q does not exist", queue), nil
	case meta.IsNoMatchError(err):
		return NotServed, fmt.Sprintf("Volcano queue %q cannot exist: %s is not served (Volcano is not installed)", queue, volcanov1beta1.SchemeGroupVersion.WithKind("Queue")), nil
	case err != nil:
		return Usable, "", fmt.Errorf("reading Volcano queue %q: %w", queue, err)
	case q.Status.State != "" && q.Status.State != volcanov1beta1.QueueStateOpen:
		return NotOpen, fmt.Sprintf("Volcano queue %q is %s, not %s", queue, q.Status.State, volcanov1beta1.QueueStateOpen), nil
	}
	return Usable, "", nil
}
