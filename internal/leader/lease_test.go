package leader_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/garraia/garra/internal/leader"
)

// apiserver starts a real kube-apiserver and etcd (envtest), from
// $KUBEBUILDER_ASSETS or what `hack/envtest.sh --check` finds; without
// them the test skips with the reason.
func apiserver(t *testing.T) kubernetes.Interface {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		out, err := exec.Command(filepath.Join("..", "..", "hack", "envtest.sh"), "--check").Output()
		if err != nil {
			t.Skipf("envtest binaries unavailable (set KUBEBUILDER_ASSETS or run `make envtest-assets`): %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		dir = lines[len(lines)-1]
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return kubernetes.NewForConfigOrDie(cfg)
}

func lease(c kubernetes.Interface, identity string) *leader.Lease {
	return &leader.Lease{Client: c.CoordinationV1(), Namespace: "default", Name: "garra-telegram-poller", Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
}

// Two electors on a real API server: one runs the job, a graceful stop
// hands it over, and a leader that loses the lease stops before the other
// starts.
func TestLeaseElection(t *testing.T) {
	c := apiserver(t)
	j := newJobs()
	reps := map[string]*replica{}
	for _, name := range []string{"pod-a", "pod-b"} {
		reps[name] = start(lease(c, name), j.job(name, 100*time.Millisecond))
		t.Cleanup(func() { reps[name].cancel() })
	}
	time.Sleep(2 * time.Second)
	j.noOverlap(t)
	took := handover(t, j, reps, 15*time.Second)
	t.Logf("lease handover after a graceful stop: %s (retry period 200ms)", took.Round(time.Millisecond))

	// The stopped replica comes back; then an intruder takes the lease
	// from the current leader, which must stop within its renew deadline.
	var survivor string
	for name, r := range reps {
		select {
		case <-r.done:
			reps[name] = start(lease(c, name), j.job(name, 100*time.Millisecond))
		default:
			survivor = name
		}
	}
	j.mu.Lock()
	if j.running != survivor {
		t.Fatalf("%q runs the job, want %q", j.running, survivor)
	}
	j.mu.Unlock()
	ctx := context.Background()
	var t0 time.Time
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := c.CoordinationV1().Leases("default").Get(ctx, "garra-telegram-poller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		intruder, secs, now := "intruder", int32(4), metav1.NewMicroTime(time.Now())
		l.Spec = coordinationv1.LeaseSpec{HolderIdentity: &intruder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now}
		t0 = time.Now()
		_, err = c.CoordinationV1().Leases("default").Update(ctx, l, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(6 * time.Second)
	for {
		j.mu.Lock()
		stopped := j.stops[survivor]
		j.mu.Unlock()
		if stopped.After(t0) {
			t.Logf("%s stopped %s after losing the lease (renew deadline 2s)", survivor, stopped.Sub(t0).Round(time.Millisecond))
			break
		}
		select {
		case <-j.changed:
		case <-deadline:
			t.Fatalf("%s kept the job after losing the lease", survivor)
		}
	}
	// After the intruder's lease expires, a replica leads again, alone.
	next := j.waitRunning(t, "", 15*time.Second)
	j.noOverlap(t)
	t.Logf("%s leads %s after the lease was taken", next, time.Since(t0).Round(time.Millisecond))
	for _, r := range reps {
		r.stop(t)
	}
}
