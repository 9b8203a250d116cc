package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// Headers of the gateway's GET /readyz: the hash of the config file it
// loaded, and the first problem of the last reload when it was refused.
const (
	HeaderConfigHash     = "X-Garra-Config-Hash"
	HeaderConfigRejected = "X-Garra-Config-Rejected"
)

// ConfigPendingRequeue is how often the operator asks again while the
// gateway has not loaded the rendered config (the kubelet delivers a
// ConfigMap change within about a minute).
const ConfigPendingRequeue = 5 * time.Second

// ProbeTimeout bounds one question to the gateway: a reconcile must not
// hang on a gateway that does not answer.
const ProbeTimeout = 2 * time.Second

// GatewayProbe asks the gateway at url which config it runs: the value of
// its X-Garra-Config-Hash header and, when its last reload was refused, of
// X-Garra-Config-Rejected.
type GatewayProbe func(ctx context.Context, url string) (hash, rejected string, err error)

// ConfigHash is the hash the gateway reports for the exact bytes of the
// config.yml the operator renders.
func ConfigHash(configYAML string) string {
	sum := sha256.Sum256([]byte(configYAML))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// GatewayReadyzURL is the gateway Service's /readyz.
func GatewayReadyzURL(gs *garrav1alpha1.GarraServer) string {
	return "http://" + gatewayName(gs) + "." + gs.Namespace + ".svc:" + strconv.Itoa(GatewayPort) + "/readyz"
}

// HTTPGatewayProbe is the probe of a running manager: a GET within
// ProbeTimeout. Any status answers: the gateway says which config it runs
// also while it is not ready (starting, draining).
func HTTPGatewayProbe(c *http.Client) GatewayProbe {
	return func(ctx context.Context, url string) (string, string, error) {
		ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", "", fmt.Errorf("probe %s: %w", url, err)
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", "", fmt.Errorf("probe %s: %w", url, err)
		}
		defer func() { _ = resp.Body.Close() }()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp.Header.Get(HeaderConfigHash), resp.Header.Get(HeaderConfigRejected), nil
	}
}

// maxProblemLen bounds the gateway's problem in a condition message.
const maxProblemLen = 512

// configApplied is the ConfigApplied condition from what the probe
// returned: applied when the gateway's hash is the rendered one; rejected
// when it names a problem with a reload (it keeps the last good config);
// pending otherwise. It is pure, for the table test.
func configApplied(want, got, rejected string, probeErr error) (metav1.ConditionStatus, string, string) {
	switch {
	case probeErr != nil:
		return metav1.ConditionFalse, garrav1alpha1.ReasonPending, "the gateway could not be asked which config it runs: " + oneLine(probeErr.Error())
	case got == want:
		return metav1.ConditionTrue, garrav1alpha1.ReasonApplied, "the gateway runs config " + want
	case rejected != "":
		return metav1.ConditionFalse, garrav1alpha1.ReasonRejected, "the gateway refused config " + want + " and keeps serving " + orNone(got) + ": " + oneLine(rejected)
	}
	return metav1.ConditionFalse, garrav1alpha1.ReasonPending, "the gateway runs config " + orNone(got) + ", not yet " + want
}

func orNone(hash string) string {
	if hash == "" {
		return "(none reported)"
	}
	return hash
}

// oneLine keeps a message to one bounded line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxProblemLen {
		s = s[:maxProblemLen] + "…"
	}
	return s
}
