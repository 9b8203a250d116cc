package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/garraia/garra/internal/config"
)

// cutGrace is how long the drain waits, after cutting the calls still
// running at its deadline, for them to write their error and return.
const cutGrace = 5 * time.Second

// Run serves on gateway.listen until ctx ends, then hands over (see
// HandOver), drains (see Drain) and exits. With a config file it reloads on change meanwhile. ready, when
// not nil, receives the bound address once listening.
func (g *Gateway) Run(ctx context.Context, ready func(addr net.Addr)) error {
	listen := g.cur.Load().cfg.Gateway.Listen
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("gateway.listen %s: %w", listen, err)
	}
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	g.log.Info("garra gateway listening", "addr", ln.Addr().String())
	eln, err := listenEgress(g.cur.Load().cfg)
	if err != nil {
		_ = ln.Close()
		return err
	}
	if eln != nil {
		// Logged here, before ready: whoever waits for the gateway to
		// listen finds the proxy's address too.
		g.log.Info("garra gateway egress proxy listening", "addr", eln.Addr().String())
		// The proxy stops with the gateway's context: tunnels are cut
		// then, not drained (a sandbox retries its request).
		ectx, stopEgress := context.WithCancel(ctx)
		egressDone := make(chan struct{})
		defer func() { stopEgress(); <-egressDone }()
		go func() {
			defer close(egressDone)
			if err := g.ServeEgress(ectx, eln); err != nil && ectx.Err() == nil {
				g.log.Error("egress proxy stopped", "error", err.Error())
			}
		}()
	}
	if g.configPath != "" {
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go g.watch(wctx)
		if pw := g.policyWatch; pw != nil {
			go g.watchPolicy(wctx, pw)
		}
	}
	vctx, stopVerify := context.WithCancel(ctx)
	defer stopVerify()
	go g.verifyLoop(vctx)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	g.HandOver(handoverDelay(g.cur.Load().cfg.Gateway.HandoverSeconds))
	g.Drain(drainDeadline(g.cur.Load().cfg.Gateway.DrainSeconds))
	shutdown, cancel := context.WithTimeout(context.Background(), cutGrace)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
		return fmt.Errorf("gateway shutdown: %w", err)
	}
	return nil
}

// drainDeadline is gateway.drain_seconds within its bounds: a value Check
// refuses (the gateway still boots with it) must neither cut at once nor
// outlast any grace period.
func drainDeadline(secs int) time.Duration {
	if secs == 0 {
		secs = config.DefaultDrainSeconds
	}
	return time.Duration(min(max(secs, config.MinDrainSeconds), config.MaxDrainSeconds)) * time.Second
}

// handoverDelay is gateway.handover_seconds within its bounds.
func handoverDelay(secs int) time.Duration {
	return time.Duration(min(max(secs, 0), config.MaxHandoverSeconds)) * time.Second
}

// HandOver is the first step of stopping a replica among others: for d it
// goes on serving new requests, but readiness turns false and every
// response closes its connection, so that by the time the drain refuses
// new requests the load balancer has moved the callers (their next
// connection) to the replicas that stay. A deleted pod leaves its
// Service's endpoints at once, yet each node's proxy learns it a moment
// later; refusing during that moment would fail calls a replica could
// have served. d of 0 returns at once.
func (g *Gateway) HandOver(d time.Duration) {
	if d <= 0 {
		return
	}
	g.handingOver.Store(true)
	g.log.Info("handing over: serving new requests for a while, each on its own connection, before draining", "for", d)
	time.Sleep(d)
}

// Drain stops taking requests (readiness goes false, /mcp and the chat
// API answer 503 draining) and waits for the ones in flight, up to
// deadline. What is still running then is cut: its tool context ends as
// a deadline would, so an agent run or an ask ends with the timeout kind
// rather than hanging. It returns once nothing is in flight, or cutGrace
// after the cut.
func (g *Gateway) Drain(deadline time.Duration) {
	g.flightMu.Lock()
	g.draining = true
	g.flightMu.Unlock()
	start := g.now()
	g.log.Info("draining: new requests get 503 while the calls in flight finish", "deadline", deadline)
	idle := make(chan struct{})
	go func() { g.flight.Wait(); close(idle) }()
	t := time.NewTimer(deadline)
	defer t.Stop()
	select {
	case <-idle:
		g.log.Info("drained", "after", g.now().Sub(start).Round(time.Millisecond))
		return
	case <-t.C:
	}
	g.log.Warn("drain deadline reached: cutting the calls still running", "deadline", deadline)
	g.stopOnce.Do(func() { close(g.hardStop) })
	select {
	case <-idle:
	case <-time.After(cutGrace):
		g.log.Error("calls still running after the cut; exiting anyway")
	}
}

// untilHardStop is ctx, ended as by a deadline when the drain cuts the
// calls still running.
func (g *Gateway) untilHardStop(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx2, cancel := context.WithCancel(stopContext{values: ctx, stop: g.hardStop})
	stop := context.AfterFunc(ctx, cancel)
	return ctx2, func() { stop(); cancel() }
}

// stopContext is done when stop closes, with context.DeadlineExceeded:
// the drain's deadline is a deadline, and the agent and ask cores map
// that to their timeout kind. It carries the values of the call's own
// context, whose cancellation untilHardStop adds on top.
type stopContext struct {
	values context.Context
	stop   <-chan struct{}
}

func (s stopContext) Deadline() (time.Time, bool) { return time.Time{}, false }

func (s stopContext) Done() <-chan struct{} { return s.stop }

func (s stopContext) Err() error {
	select {
	case <-s.stop:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (s stopContext) Value(key any) any { return s.values.Value(key) }
