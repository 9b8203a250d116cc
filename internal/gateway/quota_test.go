package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/pgbudget"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

const (
	alphaToken = "alpha-token-1234567"
	betaToken  = "beta-token-12345678"
)

// quotaStore is where a test's quotas and budgets live: this process's
// memory (a gateway on SQLite) or a PostgreSQL shared by replicas.
type quotaStore struct {
	name string
	// opts returns the options of one replica on the store; pool is nil
	// in memory.
	opts func(t testing.TB) (func(*gateway.Options), *pgxpool.Pool)
}

func quotaStores() []quotaStore {
	memory := quotaStore{"memory", func(testing.TB) (func(*gateway.Options), *pgxpool.Pool) { return func(*gateway.Options) {}, nil }}
	var once sync.Once
	var dsn string
	pg := quotaStore{"postgres", func(t testing.TB) (func(*gateway.Options), *pgxpool.Pool) {
		once.Do(func() { dsn = pgtest.DSN(t) })
		p, s := openPG(t, dsn)
		return pgOptions(s, s), p
	}}
	return []quotaStore{memory, pg}
}

// openPG opens a pool on dsn and its budget and quota store.
func openPG(t testing.TB, dsn string) (*pgxpool.Pool, *pgbudget.Store) {
	p, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	s, err := pgbudget.Open(context.Background(), p, pgbudget.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

// pgOptions keep the shared budgets in shared and the orchestrators'
// quotas in quotas, as `garra gateway` does on PostgreSQL with one store.
func pgOptions(shared, quotas *pgbudget.Store) func(*gateway.Options) {
	return func(o *gateway.Options) {
		o.Budgets = func(name string, limit int, window time.Duration) gateway.Counter {
			if strings.HasPrefix(name, "quota:") {
				return quotas.Budget(name, limit, window)
			}
			return shared.Budget(name, limit, window)
		}
		o.Quotas = gateway.QuotaStores{
			Tokens: func(name string, limit int64) gateway.TokenCounter { return quotas.Tokens(name, limit) },
			Slots: func(name string, limit int, lease time.Duration) gateway.SlotCounter {
				return quotas.Slots(name, limit, lease)
			},
			Joint: quotas,
		}
	}
}

// eachStore runs f on a gateway in memory and on PostgreSQL, each with a
// database of its own.
func eachStore(t *testing.T, f func(t *testing.T, st quotaStore)) {
	for _, st := range quotaStores() {
		t.Run(st.name, func(t *testing.T) { f(t, st) })
	}
}

func quotaYAML(double *llmdouble.Server, mcpExtra, alphaQuota, betaQuota string) string {
	return enabled + "    allow_ask: true\n    allow_agent: true\n    agent_max_seconds: 60\n" + mcpExtra + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [status, ask, agent]
` + alphaQuota + `
      - name: beta
        key_env: BETA_KEY
        tools: [status, ask, agent]
` + betaQuota + `
llm: {provider: openrouter, base_url: ` + double.OpenAIBaseURL() + "}\n"
}

var quotaEnv = map[string]string{"ALPHA_KEY": alphaToken, "BETA_KEY": betaToken, "OPENROUTER_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}

// rawCall calls tool over a plain JSON POST, as a client that asked for
// no progress does, and returns the envelope and the response's headers.
func rawCall(url, token, tool string, args map[string]any) (map[string]any, http.Header, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, resp.Header, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	var rpc struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &rpc); err != nil || len(rpc.Result.Content) == 0 {
		return nil, resp.Header, fmt.Errorf("not a tool result: %s", b)
	}
	var env map[string]any
	err = json.Unmarshal([]byte(rpc.Result.Content[0].Text), &env)
	return env, resp.Header, err
}

func errField(env map[string]any, k string) any {
	e, _ := env["error"].(map[string]any)
	return e[k]
}

// quotaLeft is what garra_status tells the caller of its quota q.
func quotaLeft(t *testing.T, url, token, q string) (remaining, limit int64) {
	t.Helper()
	env, _, err := rawCall(url, token, "garra_status", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	qs, _ := data["quota"].(map[string]any)
	v, ok := qs[q].(map[string]any)
	if !ok {
		t.Fatalf("garra_status shows no %s: %v", q, data)
	}
	return int64(v["remaining"].(float64)), int64(v["limit"].(float64))
}

// A caller over its ask_per_minute is refused with over_quota naming the
// quota and the wait, in the envelope and in Retry-After; the model is
// not called and the shared budget not spent; the other orchestrator is
// untouched.
func TestAskQuotaRefusesOnlyItsOrchestrator(t *testing.T) {
	eachStore(t, func(t *testing.T, st quotaStore) {
		double := llmdouble.New(t)
		opt, _ := st.opts(t)
		h := start(t, quotaYAML(double, "    ask_budget_per_minute: 3\n", "        quota: {ask_per_minute: 2}", ""), quotaEnv, opt)
		for i := range 2 {
			if env, _, err := rawCall(h.url, alphaToken, "garra_ask", map[string]any{"message": "hi"}); err != nil || env["ok"] != true {
				t.Fatalf("alpha's call %d: %v %v", i+1, env, err)
			}
		}
		env, hdr, err := rawCall(h.url, alphaToken, "garra_ask", map[string]any{"message": "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if kindOf(env) != "over_quota" || errField(env, "quota") != "ask_per_minute" {
			t.Fatalf("third call: %v", env)
		}
		secs, _ := errField(env, "retry_after_secs").(float64)
		ra, _ := strconv.Atoi(hdr.Get("Retry-After"))
		if secs < 1 || secs > 60 || ra != int(secs) {
			t.Fatalf("retry_after_secs %v, Retry-After %q", secs, hdr.Get("Retry-After"))
		}
		if n := len(double.Requests()); n != 2 {
			t.Fatalf("the model was called %d times, want 2", n)
		}
		// The shared budget of 3 has one call left, which beta gets.
		if env, hdr, _ := rawCall(h.url, betaToken, "garra_ask", map[string]any{"message": "hi"}); env["ok"] != true || hdr.Get("Retry-After") != "" {
			t.Fatalf("beta: %v (Retry-After %q)", env, hdr.Get("Retry-After"))
		}
		if left, limit := quotaLeft(t, h.url, alphaToken, "ask_per_minute"); left != 0 || limit != 2 {
			t.Fatalf("alpha sees %d of %d left", left, limit)
		}
		metrics := getBody(t, h.url+"/metrics")
		// Unnamed by default (gateway.metrics.orchestrator_labels).
		for _, want := range []string{`garra_quota_refusals_total{orchestrator="orchestrator",quota="ask_per_minute"} 1`, `garra_quota_remaining{orchestrator="orchestrator",quota="ask_per_minute"} 0`} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
		if strings.Contains(metrics, alphaToken) {
			t.Error("a token in the metrics")
		}
	})
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// The fairness scenario: two orchestrators with ask and agent quotas, on
// three replicas sharing one PostgreSQL (one gateway in memory). alpha
// sends ten times its quotas from 100 callers at once while beta calls at
// its own pace, one call after another: every call of beta succeeds, the
// model sees exactly the sum of the two quotas, and each replica's own
// counts (its metrics) are exactly what it answered.
func TestQuotaFairness(t *testing.T) {
	eachStore(t, func(t *testing.T, st quotaStore) {
		double := llmdouble.New(t)
		q := "        quota: {ask_per_minute: 5, agent_per_minute: 5}"
		yaml := quotaYAML(double, "    ask_budget_per_minute: 1000\n    agent_budget_per_minute: 1000\n", q, q)
		yaml = strings.Replace(yaml, "  mcp_http:\n", "  rate_limit: {requests_per_minute: 100000}\n  metrics: {orchestrator_labels: true}\n  mcp_http:\n", 1)
		replicas := 1
		if st.name == "postgres" {
			replicas = 3
		}
		var urls []string
		for range replicas {
			opt, _ := st.opts(t)
			urls = append(urls, start(t, yaml, quotaEnv, opt).url)
		}
		tools := []string{"garra_ask", "garra_agent"}
		// answered[replica][who+" "+tool] counts each answer by its kind
		// ("ok", or the quota that refused it).
		answered := make([]map[string]map[string]int, replicas)
		for r := range answered {
			answered[r] = map[string]map[string]int{}
		}
		var mu sync.Mutex
		call := func(who, token string, i int) string {
			r := i % replicas
			tool := tools[i%2]
			env, _, err := rawCall(urls[r], token, tool, map[string]any{"message": "hi"})
			k := "ok"
			switch {
			case err != nil:
				k = err.Error()
			case env["ok"] != true && kindOf(env) == "over_quota":
				k, _ = errField(env, "quota").(string)
			case env["ok"] != true:
				k = kindOf(env)
			}
			mu.Lock()
			defer mu.Unlock()
			if answered[r][who+" "+tool] == nil {
				answered[r][who+" "+tool] = map[string]int{}
			}
			answered[r][who+" "+tool][k]++
			return k
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 100 {
			wg.Go(func() {
				<-start
				call("alpha", alphaToken, i)
			})
		}
		close(start)
		for i := range 10 {
			if k := call("beta", betaToken, i); k != "ok" {
				t.Errorf("beta's call %d during alpha's flood: %s", i+1, k)
			}
		}
		wg.Wait()
		total := func(who, tool, kind string) (n int) {
			for r := range answered {
				n += answered[r][who+" "+tool][kind]
			}
			return n
		}
		for _, tool := range tools {
			quotaName := map[string]string{"garra_ask": "ask_per_minute", "garra_agent": "agent_per_minute"}[tool]
			if ok, over := total("alpha", tool, "ok"), total("alpha", tool, quotaName); ok != 5 || over != 45 {
				t.Errorf("alpha's %s: %d ok, %d refused by %s; want 5 and 45 (%v)", tool, ok, over, quotaName, answered)
			}
			if ok := total("beta", tool, "ok"); ok != 5 {
				t.Errorf("beta's %s: %d of 5 ok", tool, ok)
			}
		}
		if n := len(double.Requests()); n != 20 {
			t.Errorf("the model saw %d calls, want exactly the sum of the quotas, 20", n)
		}
		for r, url := range urls {
			m := metricsText(t, url)
			for _, tool := range tools {
				quotaName := map[string]string{"garra_ask": "ask_per_minute", "garra_agent": "agent_per_minute"}[tool]
				a, b := answered[r]["alpha "+tool], answered[r]["beta "+tool]
				for series, want := range map[string]int{
					`garra_mcp_calls_total{outcome="ok",tool="` + tool + `"}`:                    a["ok"] + b["ok"],
					`garra_mcp_calls_total{outcome="refused",tool="` + tool + `"}`:               a[quotaName],
					`garra_quota_refusals_total{orchestrator="alpha",quota="` + quotaName + `"}`: a[quotaName],
					`garra_quota_refusals_total{orchestrator="beta",quota="` + quotaName + `"}`:  0,
					`garra_quota_remaining{orchestrator="alpha",quota="` + quotaName + `"}`:      0,
					`garra_quota_remaining{orchestrator="beta",quota="` + quotaName + `"}`:       0,
				} {
					// A counter never incremented is absent; a gauge is always there.
					if (want > 0 || strings.HasPrefix(series, "garra_quota_remaining")) && !strings.Contains(m, series+" ") {
						t.Errorf("replica %d: no %s", r, series)
					}
					if got := metricValue(m, series); got != want {
						t.Errorf("replica %d: %s = %d, want %d", r, series, got, want)
					}
				}
			}
		}
	})
}

// metricValue is the value of one series in a Prometheus text page (0
// when absent, as a counter never incremented is).
func metricValue(page, series string) int {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	return 0
}

// agent_concurrent bounds one orchestrator's runs in flight.
func TestAgentConcurrentQuota(t *testing.T) {
	eachStore(t, func(t *testing.T, st quotaStore) {
		double := llmdouble.New(t, llmdouble.Step{Text: "one", Delay: 600 * time.Millisecond}, llmdouble.Step{Text: "two"})
		opt, _ := st.opts(t)
		h := start(t, quotaYAML(double, "    agent_budget_per_minute: 10\n", "        quota: {agent_concurrent: 1}", ""), quotaEnv, opt)
		first := make(chan map[string]any, 1)
		go func() {
			env, _, _ := rawCall(h.url, alphaToken, "garra_agent", map[string]any{"message": "slow"})
			first <- env
		}()
		deadline := time.Now().Add(5 * time.Second)
		for len(double.Requests()) == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if left, _ := quotaLeft(t, h.url, alphaToken, "agent_concurrent"); left != 0 {
			t.Fatalf("alpha sees %d runs free while one runs", left)
		}
		env, _, err := rawCall(h.url, alphaToken, "garra_agent", map[string]any{"message": "second"})
		if err != nil || kindOf(env) != "over_quota" || errField(env, "quota") != "agent_concurrent" {
			t.Fatalf("a second run in flight: %v %v", env, err)
		}
		if env := <-first; env["ok"] != true {
			t.Fatalf("the first run: %v", env)
		}
		if env, _, _ := rawCall(h.url, alphaToken, "garra_agent", map[string]any{"message": "again"}); env["ok"] != true {
			t.Fatalf("a run after the first ended: %v", env)
		}
	})
}

// llm_tokens_per_day: a call is held to its bound before the model call
// and settled to the usage the provider reports, on both wire families; a
// call whose bound the day cannot hold is refused before anything runs.
func TestTokenQuotaSettlesToProviderUsage(t *testing.T) {
	for _, provider := range []string{"openrouter", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			eachStore(t, func(t *testing.T, st quotaStore) {
				double := llmdouble.New(t, llmdouble.Step{Text: "forty-two"})
				yaml := quotaYAML(double, "", "        quota: {llm_tokens_per_day: 100000}", "        quota: {llm_tokens_per_day: 100}")
				if provider == "anthropic" {
					yaml = strings.Replace(yaml, "llm: {provider: openrouter, base_url: "+double.OpenAIBaseURL(), "llm: {provider: anthropic, base_url: "+double.AnthropicBaseURL(), 1)
				}
				opt, _ := st.opts(t)
				h := start(t, yaml, quotaEnv, opt)
				if env, _, _ := rawCall(h.url, alphaToken, "garra_ask", map[string]any{"message": "the answer?"}); env["ok"] != true {
					t.Fatalf("ask: %v", env)
				}
				reqs := double.Requests()
				if len(reqs) != 1 || string(reqs[0].Protocol) != map[string]string{"openrouter": "openai", "anthropic": "anthropic"}[provider] {
					t.Fatalf("requests %+v", reqs)
				}
				// The double's usage: a quarter of the request body, and of
				// the answer with its (empty) tool calls, plus one each.
				used := int64(len(reqs[0].RawBody)/4+1) + int64((len("forty-two")+len("[]"))/4+1)
				if left, limit := quotaLeft(t, h.url, alphaToken, "llm_tokens_per_day"); left != limit-used {
					t.Fatalf("alpha sees %d tokens left of %d, want %d (usage %d settled)", left, limit, limit-used, used)
				}
				env, hdr, _ := rawCall(h.url, betaToken, "garra_ask", map[string]any{"message": "the answer?"})
				if kindOf(env) != "over_quota" || errField(env, "quota") != "llm_tokens_per_day" || hdr.Get("Retry-After") == "" {
					t.Fatalf("beta over its day: %v (Retry-After %q)", env, hdr.Get("Retry-After"))
				}
				if len(double.Requests()) != 1 {
					t.Fatal("a call over the token quota reached the model")
				}
			})
		})
	}
}

// A quota store that cannot answer refuses every quota'd call (fail
// closed), before the model. The budgets and the per-IP limit stay on a
// store that answers, as they fail closed on their own: the outage here
// is the quotas' alone.
func TestQuotaFailsClosedWithoutItsStore(t *testing.T) {
	dsn := pgtest.DSN(t)
	_, shared := openPG(t, dsn)
	quotaPool, quotas := openPG(t, dsn)
	opt := pgOptions(shared, quotas)
	double := llmdouble.New(t)
	h := start(t, quotaYAML(double, "", "        quota: {ask_per_minute: 5, agent_concurrent: 1, llm_tokens_per_day: 100000}", ""), quotaEnv, opt)
	if env, _, _ := rawCall(h.url, alphaToken, "garra_ask", map[string]any{"message": "hi"}); env["ok"] != true {
		t.Fatalf("before the outage: %v", env)
	}
	quotaPool.Close()
	for _, tool := range []string{"garra_ask", "garra_agent"} {
		env, _, err := rawCall(h.url, alphaToken, tool, map[string]any{"message": "hi"})
		if err != nil || kindOf(env) != "over_quota" {
			t.Fatalf("%s without the quota store: %v %v", tool, env, err)
		}
	}
	if left, _ := quotaLeft(t, h.url, alphaToken, "llm_tokens_per_day"); left != 0 {
		t.Fatalf("alpha sees %d tokens left without the store", left)
	}
	if len(double.Requests()) != 1 {
		t.Fatal("a call reached the model without its quota store")
	}
	// beta has no quota: the outage is not its.
	if env, _, _ := rawCall(h.url, betaToken, "garra_ask", map[string]any{"message": "hi"}); env["ok"] != true {
		t.Fatalf("beta during alpha's quota outage: %v", env)
	}
}

// A run whose model call needs more tokens than the day has left ends
// over_quota at that turn, naming the quota, and the model is not called:
// the call held the bound of its message (4096 + 2 + 16 tokens) and the
// first turn's prompt and tool definitions need more than the 10 left.
func TestTokenQuotaEndsARunBeforeTheModel(t *testing.T) {
	eachStore(t, func(t *testing.T, st quotaStore) {
		double := llmdouble.New(t)
		opt, _ := st.opts(t)
		h := start(t, quotaYAML(double, "", "        quota: {llm_tokens_per_day: 4124}", ""), quotaEnv, opt)
		env, _, err := rawCall(h.url, alphaToken, "garra_agent", map[string]any{"message": "go"})
		if err != nil || kindOf(env) != "over_quota" || errField(env, "quota") != "llm_tokens_per_day" || errField(env, "retry_after_secs") == nil {
			t.Fatalf("run: %v %v", env, err)
		}
		if msg, _ := errField(env, "message").(string); !strings.Contains(msg, "model turn 1") {
			t.Fatalf("message %q does not say which turn", msg)
		}
		if len(double.Requests()) != 0 {
			t.Fatal("the model was called")
		}
		// What the call held is given back when it ends.
		if left, limit := quotaLeft(t, h.url, alphaToken, "llm_tokens_per_day"); left != limit {
			t.Fatalf("%d of %d left after a run that spent nothing", left, limit)
		}
	})
}
