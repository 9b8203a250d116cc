package leader

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Lease timings (client-go's usual ones): another replica can take the
// lease LeaseDuration after the last renewal; the leader gives up after
// failing to renew for RenewDeadline, which leaves the job the difference
// to stop.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// Lease elects through a coordination.k8s.io Lease.
type Lease struct {
	// Client is the coordination.k8s.io client (only that group: the
	// whole clientset would weigh the garra binary down for nothing).
	Client    coordinationv1client.CoordinationV1Interface
	Namespace string
	Name      string
	// Identity is this replica's name in the lease (the pod name).
	Identity string
	// Timings; 0 = the defaults above.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Logger                                    *slog.Logger
}

func (l *Lease) log() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// trackingLock notes that this replica wrote itself into the lease: the
// elector acquired it, so its OnStartedLeading runs and must be waited for.
type trackingLock struct {
	resourcelock.Interface
	wrote atomic.Bool
}

func (t *trackingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := t.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == t.Identity() {
		t.wrote.Store(true)
	}
	return err
}

func (t *trackingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	err := t.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == t.Identity() {
		t.wrote.Store(true)
	}
	return err
}

// Lead implements Elector.
//
// The lease is given up here, after fn has returned, and not by client-go's
// ReleaseOnCancel: that releases at the end of the renew loop, before the
// leader's context is cancelled, so another replica could start while fn
// still runs. A graceful stop (ctx ends) releases at once, so the next
// leader starts within its RetryPeriod; a lost renewal releases nothing and
// the lease expires, LeaseDuration after its last renewal, while fn has
// already been told to stop at RenewDeadline.
func (l *Lease) Lead(ctx context.Context, fn func(context.Context)) {
	ld, rd, rp := l.LeaseDuration, l.RenewDeadline, l.RetryPeriod
	if ld <= 0 {
		ld = DefaultLeaseDuration
	}
	if rd <= 0 {
		rd = DefaultRenewDeadline
	}
	if rp <= 0 {
		rp = DefaultRetryPeriod
	}
	for ctx.Err() == nil {
		lock := &trackingLock{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: l.Namespace, Name: l.Name},
			Client:     l.Client,
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.Identity},
		}}
		ran := make(chan struct{})
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:          lock,
			LeaseDuration: ld,
			RenewDeadline: rd,
			RetryPeriod:   rp,
			Name:          l.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) {
					defer close(ran)
					l.log().Info("leader: this replica holds the lease", "lease", l.Namespace+"/"+l.Name, "identity", l.Identity)
					fn(lctx)
					l.log().Info("leader: this replica stopped leading", "lease", l.Namespace+"/"+l.Name, "identity", l.Identity)
				},
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			l.log().Error("leader: bad lease election settings", "error", err)
			return
		}
		le.Run(ctx)
		if lock.wrote.Load() {
			<-ran
			if ctx.Err() != nil {
				l.release(lock)
			}
		}
		if !sleep(ctx, rp) {
			return
		}
	}
}

// release empties the lease if this replica still holds it, as
// client-go's release does, so that the next replica need not wait for it
// to expire.
func (l *Lease) release(lock resourcelock.Interface) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, _, err := lock.Get(ctx)
	if err != nil || rec.HolderIdentity != l.Identity {
		return
	}
	now := metav1.NewTime(time.Now())
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions: rec.LeaderTransitions, LeaseDurationSeconds: 1, RenewTime: now, AcquireTime: now,
	}); err != nil {
		l.log().Warn("leader: could not release the lease; it expires by itself", "error", err)
	}
}
