// Package leader runs a job on one replica at a time: the Telegram long
// poll, which Telegram allows once per bot. In the cluster the replicas
// elect through a Kubernetes Lease (client-go's leaderelection); off the
// cluster, through a PostgreSQL advisory lock in the shared store.
//
// Either way the job's context ends when leadership is lost, and the lease
// or lock is given up only after the job has returned, so a replica that
// stops leading stops its job before another can start it.
package leader

import (
	"context"
	"time"
)

// Elector runs fn while this process leads.
type Elector interface {
	// Lead blocks until ctx ends. Each time this process becomes the
	// leader it runs fn with a context that ends when leadership is lost
	// or ctx ends, and gives leadership up only after fn has returned.
	Lead(ctx context.Context, fn func(context.Context))
}

// Always is the Elector of a single replica: fn runs at once.
type Always struct{}

// Lead implements Elector.
func (Always) Lead(ctx context.Context, fn func(context.Context)) { fn(ctx) }

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
