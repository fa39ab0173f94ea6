package v1alpha1

import "strings"

// AnnotationVolcanoQueue names the Volcano Queue of a PodCliqueSet's gangs (upstream Grove's
// annotation, on the PodCliqueSet or repeated on its clique templates). Without it the gangs
// join Volcano's "default" queue. Only the volcano scheduler backend reads it.
const AnnotationVolcanoQueue = "scheduling.grove.io/volcano-queue"

// VolcanoQueueOf is the Volcano queue a PodCliqueSet names: its own annotation, else the first
// clique template's (admission makes all that carry one agree); "" when none does.
func VolcanoQueueOf(pcs *PodCliqueSet) string {
	if q := strings.TrimSpace(pcs.Annotations[AnnotationVolcanoQueue]); q != "" {
		return q
	}
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		if q := strings.TrimSpace(c.Annotations[AnnotationVolcanoQueue]); q != "" {
			return q
		}
	}
	return ""
}
