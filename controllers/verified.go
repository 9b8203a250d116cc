package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

// SandboxProbe asks the gateway at url, as the owner (ownerKey), for its
// last handshake with each sandbox (GET /sandboxz).
type SandboxProbe func(ctx context.Context, url, ownerKey string) (sandboxz.Report, error)

// VerifyRequeue is how often the operator asks the gateway again: while a
// sandbox is not verified (a pod starting, a token being repaired), and
// to notice one that stops working.
const VerifyRequeue = 30 * time.Second

// VerifyPendingRequeue is the shorter wait while the gateway, asked,
// reports some sandbox not verified yet (an orchestrator just added, a pod
// still starting, a token being repaired): it re-checks those every 5 s too.
const VerifyPendingRequeue = 5 * time.Second

// ReasonNotChecked is an orchestrator's verifiedReason while the gateway
// has no verdict on its sandbox yet.
const ReasonNotChecked = "NotChecked"

// ReasonSuspended is the verifiedReason of a sandbox suspended while idle:
// there is nothing to shake hands with until its next call wakes it, and
// it does not make the GarraServer unverified.
const ReasonSuspended = "Suspended"

// maxSandboxzBytes bounds the gateway's answer.
const maxSandboxzBytes = 1 << 20

// GatewaySandboxzURL is the gateway Service's /sandboxz.
func GatewaySandboxzURL(gs *garrav1alpha1.GarraServer) string {
	return "http://" + gatewayName(gs) + "." + gs.Namespace + ".svc:" + strconv.Itoa(GatewayPort) + sandboxz.Path
}

// HTTPSandboxProbe is the probe of a running manager: one GET within
// ProbeTimeout with the owner's key as the bearer.
func HTTPSandboxProbe(c *http.Client) SandboxProbe {
	return func(ctx context.Context, url, ownerKey string) (sandboxz.Report, error) {
		var rep sandboxz.Report
		ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return rep, fmt.Errorf("ask %s: %w", url, err)
		}
		req.Header.Set("Authorization", "Bearer "+ownerKey)
		resp, err := c.Do(req)
		if err != nil {
			return rep, fmt.Errorf("ask %s: %w", url, err)
		}
		defer func() { _ = resp.Body.Close() }()
		body := io.LimitReader(resp.Body, maxSandboxzBytes)
		if resp.StatusCode != http.StatusOK {
			_, _ = io.Copy(io.Discard, body)
			return rep, fmt.Errorf("ask %s: HTTP %d", url, resp.StatusCode)
		}
		if err := json.NewDecoder(body).Decode(&rep); err != nil {
			return rep, fmt.Errorf("ask %s: %w", url, err)
		}
		return rep, nil
	}
}

// verification is what the status shows of the gateway's verdicts.
type verification struct {
	// byName is each orchestrator's verdict; one the gateway has not
	// reported on is NotChecked.
	byName map[string]sandboxz.Verdict
	cond   metav1.Condition
	// pending is true when some orchestrator is not checked yet.
	pending bool
}

// verifiedFrom turns the gateway's report (or the failure to get it) into
// each orchestrator's verdict and the Verified condition. It is pure, for
// the table test.
func verifiedFrom(orchestrators []string, asleep map[string]bool, rep sandboxz.Report, probeErr error) verification {
	v := verification{byName: map[string]sandboxz.Verdict{}}
	defer func() {
		for o := range asleep {
			if _, ok := v.byName[o]; ok {
				v.byName[o] = sandboxz.Verdict{Reason: ReasonSuspended, Message: "suspended while idle: verified again once its next call wakes it"}
			}
		}
	}()
	if probeErr != nil {
		for _, o := range orchestrators {
			v.byName[o] = sandboxz.Verdict{Reason: ReasonNotChecked, Message: "the gateway could not be asked"}
		}
		v.pending = len(orchestrators) > 0
		v.cond = metav1.Condition{Status: metav1.ConditionUnknown, Reason: garrav1alpha1.ReasonPending,
			Message: "the gateway could not be asked about its sandboxes: " + oneLine(probeErr.Error())}
		return v
	}
	var bad []string
	for _, o := range orchestrators {
		if asleep[o] {
			v.byName[o] = sandboxz.Verdict{}
			continue
		}
		x, ok := rep.Sandboxes[o]
		if !ok {
			x = sandboxz.Verdict{Reason: ReasonNotChecked, Message: "the gateway has not checked this sandbox yet"}
			v.pending = true
		}
		v.byName[o] = x
		if !x.Verified {
			bad = append(bad, o+" ("+x.Reason+")")
		}
	}
	switch {
	case len(orchestrators) == 0:
		v.cond = metav1.Condition{Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonNoOrchestrators, Message: "the spec lists no orchestrator"}
	case len(bad) == 0:
		v.cond = metav1.Condition{Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonVerified,
			Message: "the gateway's MCP handshake with every sandbox works"}
	default:
		v.cond = metav1.Condition{Status: metav1.ConditionFalse, Reason: garrav1alpha1.ReasonNotVerified,
			Message: oneLine("not verified: " + strings.Join(bad, ", "))}
	}
	return v
}

// verifySandboxes asks the gateway for its verdicts, when it can be asked:
// nil without a probe (not asked), or while the gateway has no available
// replica (its Service has no endpoint).
func (r *GarraServerReconciler) verifySandboxes(ctx context.Context, s *reconcileState, gateway *appsv1.Deployment, sandboxes map[string]*appsv1.Deployment) *verification {
	gs := s.gs
	if r.SandboxProbe == nil {
		return nil
	}
	// The server's condition is about its inline entries; an attached
	// Orchestrator's verdict goes to its own status and the summary.
	var names, attached []string
	asleep := map[string]bool{}
	for _, m := range s.members {
		if m.attached {
			attached = append(attached, m.ID)
		} else {
			names = append(names, m.ID)
		}
		if idle(m) && suspended(sandboxes[m.ID]) {
			asleep[m.ID] = true
		}
	}
	var v, a verification
	// Not asked (no replica, no key) is no reason to come back early: the
	// Deployment's status and the Secret are watched, and each change
	// brings a pass. Polling instead would cost one pass per GarraServer
	// every 5 s while its gateway is down, across the whole cluster.
	asked := false
	switch key := s.values[gatewayAPIKeyRef(gs).valueKey()]; {
	case !available(gateway):
		err := fmt.Errorf("the gateway Deployment %s has no available replica", gatewayName(gs))
		v, a = verifiedFrom(names, asleep, sandboxz.Report{}, err), verifiedFrom(attached, asleep, sandboxz.Report{}, err)
	case len(key) == 0:
		err := fmt.Errorf("the gateway's key (%s) is missing", gatewayAPIKeyRef(gs))
		v, a = verifiedFrom(names, asleep, sandboxz.Report{}, err), verifiedFrom(attached, asleep, sandboxz.Report{}, err)
	default:
		asked = true
		url := GatewaySandboxzURL(gs)
		if r.SandboxProbeURL != nil {
			url = r.SandboxProbeURL(gs)
		}
		rep, err := r.SandboxProbe(ctx, url, strings.TrimSpace(string(key)))
		v, a = verifiedFrom(names, asleep, rep, err), verifiedFrom(attached, asleep, rep, err)
	}
	maps.Copy(v.byName, a.byName)
	if asked && (v.pending || a.pending || v.cond.Status != metav1.ConditionTrue) {
		s.requeueAt(VerifyPendingRequeue)
	} else {
		s.requeueAt(VerifyRequeue)
	}
	return &v
}
