// Package leader runs a job on one replica at a time: the Telegram long
// poll, which Telegram allows once per bot. Replicas share a PostgreSQL
// store, and elect through an advisory lock in it, in a cluster or off it;
// a single replica (SQLite) always leads.
//
// The job's context ends when leadership is lost, and the lock is given up
// only after the job has returned, so a replica that stops leading stops
// its job before another can start it.
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
