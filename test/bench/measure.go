package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegrove/grove/test/cluster"
)

// podTimes is when the bench first saw a pod exist, without scheduling gates, and Running.
type podTimes struct {
	ns                     string
	seen, ungated, running time.Time
	succeeded              time.Time
}

// podWatch records podTimes for every pod of the cluster from one informer: the same clock and
// the same lag for the baseline and the operators.
type podWatch struct {
	mu   sync.Mutex
	pods map[string]*podTimes
}

func watchPods(ctx context.Context, cs kubernetes.Interface) (*podWatch, error) {
	w := &podWatch{pods: map[string]*podTimes{}}
	factory := informers.NewSharedInformerFactory(cs, 0)
	inf := factory.Core().V1().Pods().Informer()
	record := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		key := p.Namespace + "/" + p.Name + "/" + string(p.UID)
		t := w.pods[key]
		if t == nil {
			t = &podTimes{ns: p.Namespace, seen: now}
			w.pods[key] = t
		}
		if t.ungated.IsZero() && len(p.Spec.SchedulingGates) == 0 {
			t.ungated = now
		}
		if t.running.IsZero() && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
			t.running = now
		}
		if t.succeeded.IsZero() && p.Status.Phase == corev1.PodSucceeded {
			t.succeeded = now
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("pod informer did not sync")
	}
	return w, nil
}

// phases is how long after begin the last of want pods in ns was created, ungated and Running;
// ok is false until all want pods reached all three.
type phases struct {
	Created, Ungated, Running time.Duration
}

func (w *podWatch) phases(ns string, want int, begin time.Time) (phases, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ph phases
	n := 0
	for _, t := range w.pods {
		if t.ns != ns || t.seen.Before(begin) {
			continue
		}
		n++
		if t.ungated.IsZero() || t.running.IsZero() {
			return ph, false
		}
		ph.Created = max(ph.Created, t.seen.Sub(begin))
		ph.Ungated = max(ph.Ungated, t.ungated.Sub(begin))
		ph.Running = max(ph.Running, t.running.Sub(begin))
	}
	return ph, n >= want
}

// count is the number of pods of ns the watch has seen since begin.
func (w *podWatch) count(ns string, begin time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, t := range w.pods {
		if t.ns == ns && !t.seen.Before(begin) {
			n++
		}
	}
	return n
}

// waitPhases waits until want pods of ns were created, ungated and Running.
func (w *podWatch) waitPhases(ctx context.Context, ns string, want int, begin time.Time, timeout time.Duration) (phases, error) {
	deadline := time.Now().Add(timeout)
	for {
		if ph, ok := w.phases(ns, want, begin); ok {
			return ph, nil
		}
		if time.Now().After(deadline) {
			return phases{}, fmt.Errorf("%s: %d of %d pods seen, not all Running after %s", ns, w.count(ns, begin), want, timeout)
		}
		select {
		case <-ctx.Done():
			return phases{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// usage is a binary's CPU time and peak resident memory, read from /proc.
type usage struct {
	CPUSeconds float64
	PeakRSSMiB float64
	RSSMiB     float64
}

var clockTicks = 100.0 // USER_HZ on Linux

func procUsage(pid int) (usage, error) {
	var u usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// Fields after the command name (which may hold spaces) start after the last ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	u.CPUSeconds = (utime + stime) / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmHWM:":
			u.PeakRSSMiB = kb / 1024
		case "VmRSS:":
			u.RSSMiB = kb / 1024
		}
	}
	return u, nil
}

// writeCount is the writes one identity made to one resource with one verb.
type writeCount struct {
	Binary   string `json:"binary"`
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	Count    int    `json:"count"`
	// Code and Reason say why the API server refused the writes counted (refused writes only).
	Code   int    `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// writesIn counts the writes of the project's binaries in ns (and to cluster-scoped objects
// when ns is empty) between from and to, from the API server's audit log.
func writesIn(c *cluster.Cluster, ns string, from, to time.Time) ([]writeCount, int, error) {
	events, err := c.AuditEvents(func(ev cluster.AuditEvent) bool {
		return (ns == "" || ev.ObjectRef.Namespace == ns) && ev.StageTimestamp.After(from) && ev.StageTimestamp.Before(to) &&
			strings.HasPrefix(ev.User.Username, "system:serviceaccount:"+cluster.Namespace+":")
	})
	if err != nil {
		return nil, 0, err
	}
	by := map[writeCount]int{}
	for _, ev := range events {
		by[writeKey(strings.TrimPrefix(ev.User.Username, "system:serviceaccount:"+cluster.Namespace+":"), ev)]++
	}
	out, total := counts(by)
	return out, total, nil
}

// writeKey is what a write is counted under: who, verb, resource[/subresource].
func writeKey(who string, ev cluster.AuditEvent) writeCount {
	res := ev.ObjectRef.Resource
	if ev.ObjectRef.Subresource != "" {
		res += "/" + ev.ObjectRef.Subresource
	}
	return writeCount{Binary: who, Verb: ev.Verb, Resource: res}
}

// refusalKey is writeKey with the refusal's code and reason.
func refusalKey(who string, ev cluster.AuditEvent) writeCount {
	k := writeKey(who, ev)
	k.Code, k.Reason = ev.ResponseStatus.Code, ev.ResponseStatus.Reason
	return k
}
