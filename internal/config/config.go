// Package config is Garra's config.yml: its types, the built-in defaults,
// loading with env-over-file precedence, and Check, which lists every problem
// a user must fix. The same file drives `garra mcp-server`, `garra ask` and
// `garra gateway`; secrets are never stored in it, only the names of the
// environment variables or files that hold them.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// Environment variables that locate or override the file.
const (
	EnvConfigPath       = "GARRAIA_CONFIG"
	EnvGatewayAPIKey    = "GARRAIA_GATEWAY_API_KEY"
	EnvExecutionProfile = "GARRAIA_EXECUTION_PROFILE"
	EnvBraveAPIKey      = "BRAVE_API_KEY" //nolint:gosec // G101: the variable's name, not a key
)

// Project defaults shared by every surface.
const (
	DefaultProvider = "openrouter"
	DefaultModel    = "z-ai/glm-5.3-flash"
	DefaultListen   = "127.0.0.1:3888"
)

// Execution profiles (spec "Bash exposure").
const (
	ProfileStandard    = "standard"
	ProfileIsolatedPod = "isolated-pod"
)

// Config is the whole config.yml.
type Config struct {
	DataDir   string    `json:"data_dir,omitempty"`
	LLM       LLM       `json:"llm"`
	Execution Execution `json:"execution"`
	Agent     Agent     `json:"agent"`
	Gateway   Gateway   `json:"gateway"`
	Channels  Channels  `json:"channels"`
	Audit     Audit     `json:"audit"`
	Store     Store     `json:"store"`
}

// Store chooses where the gateway keeps conversations, pairing, the
// channel cursor and (with postgres) its budgets.
type Store struct {
	// Driver is sqlite (the default: <data_dir>/garra.db, one replica) or
	// postgres (shared by every replica).
	Driver string `json:"driver,omitempty"`
	// DSNEnv names the variable holding the PostgreSQL DSN; DSNFile a
	// file holding it (one of them, with driver postgres).
	DSNEnv  string `json:"dsn_env,omitempty"`
	DSNFile string `json:"dsn_file,omitempty"`
}

// Store drivers.
const (
	StoreSQLite   = "sqlite"
	StorePostgres = "postgres"
)

// StoreDSN is the PostgreSQL DSN of store.dsn_env or store.dsn_file. The
// error names the field and never holds the value.
func (c *Config) StoreDSN(getenv func(string) string, readFile func(string) (string, error)) (string, error) {
	s := c.Store
	switch {
	case s.DSNEnv != "" && s.DSNFile != "":
		return "", errors.New("store.dsn_file: dsn_env is set too: set only one")
	case s.DSNFile != "":
		v, err := readFile(expandHome(s.DSNFile))
		if err != nil {
			return "", fmt.Errorf("store.dsn_file: %w", err)
		}
		return v, nil
	case s.DSNEnv != "":
		v := ""
		if getenv != nil {
			v = strings.TrimSpace(getenv(s.DSNEnv))
		}
		if v == "" {
			return "", fmt.Errorf("store.dsn_env: %s is unset or empty", s.DSNEnv)
		}
		return v, nil
	}
	return "", errors.New("store.dsn_env: driver postgres needs dsn_env or dsn_file")
}

// Audit configures the JSONL audit file both MCP servers append to.
type Audit struct {
	// Path of the live file; "" = <data_dir>/audit.jsonl (see AuditPath).
	Path string `json:"path,omitempty"`
	// MaxBytes is the size at which the file rotates to path.1 … path.N.
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// MaxFiles is how many rotated copies are kept; the oldest is dropped.
	MaxFiles int `json:"max_files,omitempty"`
}

// Audit defaults.
const (
	DefaultAuditFile     = "audit.jsonl"
	DefaultAuditMaxBytes = 10 << 20
	DefaultAuditMaxFiles = 5
)

// LLM selects the default provider and model and how to reach them.
type LLM struct {
	Provider  string `json:"provider,omitempty"`
	Model     string `json:"model,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
	// BaseURL overrides the endpoint of Provider (a local ollama, a proxy, a test double).
	BaseURL string `json:"base_url,omitempty"`
	// Aliases are extra provider names usable wherever a provider name is.
	Aliases map[string]Alias `json:"aliases,omitempty"`
	Brave   Brave            `json:"brave,omitempty"`
}

// Alias names a provider of one of the four kinds at its own endpoint.
type Alias struct {
	Provider  string `json:"provider"`
	BaseURL   string `json:"base_url,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// Brave holds the web_search key. Prefer BRAVE_API_KEY in the environment.
type Brave struct {
	APIKey string `json:"api_key,omitempty"`
	// BaseURL overrides the Brave Search API endpoint (a proxy, a test double).
	BaseURL string `json:"base_url,omitempty"`
}

// Execution says where the process runs, which decides whether bash exists.
type Execution struct {
	Profile string `json:"profile,omitempty"`
}

// Agent configures the agent's tools.
type Agent struct {
	FileRoots []string `json:"file_roots,omitempty"`
	Sandbox   Sandbox  `json:"sandbox"`
	// FileWriteBackup makes file_write keep the replaced file as
	// <path>.bak. Off by default: the workspace is usually under git.
	FileWriteBackup bool `json:"file_write_backup,omitempty"`
	// Confinement is required or best-effort: whether host bash may run
	// where the kernel cannot confine it ("": the role's default, see
	// confinement.go).
	Confinement string `json:"confinement,omitempty"`
	// Egress is internet (the default) or none: whether host bash may
	// open TCP connections.
	Egress string `json:"egress,omitempty"`
	// Expose are paths host bash may read although confinement would
	// hide them (a credential store the agent's work needs).
	Expose []string `json:"expose,omitempty"`
}

// Sandbox configures the container bash runs in on the standard profile.
type Sandbox struct {
	Mode      string   `json:"mode,omitempty"`    // off | all | allowlist
	Backend   string   `json:"backend,omitempty"` // docker | podman | ssh
	Allowlist []string `json:"allowlist,omitempty"`
	// Elevated lists tools exempt from the sandbox in mode all. For bash
	// that means the host: registered on isolated-pod, absent on standard.
	Elevated []string `json:"elevated,omitempty"`
	// Image is the container image bash runs in ("" = a Debian slim image).
	Image string `json:"image,omitempty"`
}

// Gateway configures `garra gateway`.
type Gateway struct {
	Listen string `json:"listen,omitempty"`
	APIKey string `json:"api_key,omitempty"`
	// APIKeyFile holds the owner's key instead of api_key (see
	// Config.ReadAPIKeyFile).
	APIKeyFile   string    `json:"api_key_file,omitempty"`
	AllowedHosts []string  `json:"allowed_hosts,omitempty"`
	RateLimit    RateLimit `json:"rate_limit"`
	MCPHTTP      MCPHTTP   `json:"mcp_http"`
	// DrainSeconds is how long a stopping gateway lets the calls in
	// flight finish before it cuts them; 0 means DefaultDrainSeconds.
	DrainSeconds int `json:"drain_seconds,omitempty"`
	// HandoverSeconds is how long a stopping gateway keeps serving new
	// requests, each answered with Connection: close, before the drain
	// starts refusing them: the time a load balancer (a Service's
	// endpoints) needs to send new calls to the other replicas. 0 (the
	// default) drains at once, as a single replica should.
	HandoverSeconds int `json:"handover_seconds,omitempty"`
	// Auth configures how orchestrators that do not hold a static token
	// prove who they are.
	Auth GatewayAuth `json:"auth,omitzero"`
	// Metrics configures GET /metrics.
	Metrics GatewayMetrics `json:"metrics,omitzero"`
	// Egress is the proxy through which sandboxes with egress: gateway
	// reach the network (credentials.go).
	Egress GatewayEgress `json:"egress,omitzero"`
}

// GatewayMetrics configures what GET /metrics says.
type GatewayMetrics struct {
	// OrchestratorLabels puts each orchestrator's name in the caller
	// label. Off by default: /metrics answers anyone who reaches the
	// port, and the names list the tenants; off, every orchestrator is
	// counted as "orchestrator" and the owner as "owner".
	OrchestratorLabels bool `json:"orchestrator_labels,omitempty"`
}

// Bounds and default of gateway.drain_seconds. The pod's termination
// grace period must cover it (plus a few seconds to exit).
const (
	DefaultDrainSeconds = 30
	MinDrainSeconds     = 1
	MaxDrainSeconds     = 900
)

// MaxHandoverSeconds bounds gateway.handover_seconds.
const MaxHandoverSeconds = 60

// RateLimit is the per-IP request limit of the gateway.
type RateLimit struct {
	RequestsPerMinute int `json:"requests_per_minute,omitempty"`
}

// MCPHTTP configures POST /mcp.
type MCPHTTP struct {
	Enabled              bool           `json:"enabled,omitempty"`
	AllowSend            bool           `json:"allow_send,omitempty"`
	MaxHistoryMessages   int            `json:"max_history_messages,omitempty"`
	AllowAsk             bool           `json:"allow_ask,omitempty"`
	AskAllowedModels     []string       `json:"ask_allowed_models,omitempty"`
	AskBudgetPerMinute   int            `json:"ask_budget_per_minute,omitempty"`
	AllowAgent           bool           `json:"allow_agent,omitempty"`
	AgentBudgetPerMinute int            `json:"agent_budget_per_minute,omitempty"`
	AgentMaxSeconds      int            `json:"agent_max_seconds,omitempty"`
	RedactPatterns       []string       `json:"redact_patterns,omitempty"`
	Orchestrators        []Orchestrator `json:"orchestrators,omitempty"`
	// WebFetchAllowedHosts are hosts (or host:port) the gateway's local
	// web_fetch, and the egress proxy's upward connections, may reach even
	// though they resolve to a loopback, private or link-local address;
	// every other such destination is refused.
	WebFetchAllowedHosts []string `json:"web_fetch_allowed_hosts,omitempty"`
	// Quota is every orchestrator's default quota; absent = unlimited.
	Quota *Quota `json:"quota,omitempty"`
}

// Orchestrator is one external caller of the gateway. Its token is in
// the variable KeyEnv names or in the file KeyFile names (one of them).
type Orchestrator struct {
	Name    string   `json:"name"`
	KeyEnv  string   `json:"key_env,omitempty"`
	KeyFile string   `json:"key_file,omitempty"`
	Tools   []string `json:"tools,omitempty"`
	// DenyTools are refused even when Tools lists them: deny wins.
	DenyTools []string             `json:"deny_tools,omitempty"`
	Chats     []string             `json:"chats,omitempty"`
	Sandbox   *OrchestratorSandbox `json:"sandbox,omitempty"`
	// Auth chooses how the orchestrator authenticates; absent = its
	// static token (key_env / key_file).
	Auth *OrchestratorAuth `json:"auth,omitempty"`
	// Quota is this orchestrator's own, over gateway.mcp_http.quota.
	Quota *Quota `json:"quota,omitempty"`
	// Egress is what its sandbox may reach through the gateway's egress
	// proxy; Credentials are injected there (credentials.go).
	Egress      *OrchestratorEgress `json:"egress,omitempty"`
	Credentials []Credential        `json:"credentials,omitempty"`
}

// OrchestratorSandbox points at the orchestrator's own `garra sandbox` pod.
// Its bearer token is in the variable TokenEnv names or in the file
// TokenFile names (one of them).
type OrchestratorSandbox struct {
	URL       string `json:"url"`
	TokenEnv  string `json:"token_env,omitempty"`
	TokenFile string `json:"token_file,omitempty"`
	// Wake, when set, is the Kubernetes Deployment of a sandbox that is
	// scaled to zero while idle: the gateway marks each call on it and
	// scales it back to one when a call finds it asleep.
	Wake *SandboxWake `json:"wake,omitempty"`
}

// SandboxWake names the Deployment of an idle-suspended sandbox.
type SandboxWake struct {
	Namespace  string `json:"namespace"`
	Deployment string `json:"deployment"`
}

// Channels configures the chat channels.
type Channels struct {
	Telegram Telegram `json:"telegram"`
}

// Telegram configures the Telegram channel.
type Telegram struct {
	BotTokenEnv      string   `json:"bot_token_env,omitempty"`
	APIBaseURL       string   `json:"api_base_url,omitempty"`
	ProactiveChatIDs []string `json:"proactive_chat_ids,omitempty"`
	Allowlist        []string `json:"allowlist,omitempty"`
}

// Default returns the built-in configuration used when no file exists.
func Default() *Config {
	c := &Config{}
	c.applyDefaults()
	return c
}

func (c *Config) applyDefaults() {
	if c.DataDir == "" {
		c.DataDir = "~/.garraia"
	}
	if c.Store.Driver == "" {
		c.Store.Driver = StoreSQLite
	}
	if c.LLM.Provider == "" {
		c.LLM.Provider = DefaultProvider
	}
	if c.LLM.Model == "" {
		c.LLM.Model = DefaultModel
	}
	if c.Execution.Profile == "" {
		c.Execution.Profile = ProfileStandard
	}
	if c.Agent.Sandbox.Mode == "" {
		c.Agent.Sandbox.Mode = "off"
	}
	if c.Agent.Sandbox.Backend == "" {
		c.Agent.Sandbox.Backend = "docker"
	}
	g := &c.Gateway
	if g.Listen == "" {
		g.Listen = DefaultListen
	}
	if g.DrainSeconds == 0 {
		g.DrainSeconds = DefaultDrainSeconds
	}
	if g.RateLimit.RequestsPerMinute == 0 {
		g.RateLimit.RequestsPerMinute = 120
	}
	m := &g.MCPHTTP
	if m.MaxHistoryMessages == 0 {
		m.MaxHistoryMessages = 50
	}
	if m.AskBudgetPerMinute == 0 {
		m.AskBudgetPerMinute = 10
	}
	if m.AgentBudgetPerMinute == 0 {
		m.AgentBudgetPerMinute = 2
	}
	if m.AgentMaxSeconds == 0 {
		m.AgentMaxSeconds = 300
	}
	if c.Channels.Telegram.BotTokenEnv == "" {
		c.Channels.Telegram.BotTokenEnv = "TELEGRAM_BOT_TOKEN"
	}
	if c.Audit.MaxBytes == 0 {
		c.Audit.MaxBytes = DefaultAuditMaxBytes
	}
	if c.Audit.MaxFiles == 0 {
		c.Audit.MaxFiles = DefaultAuditMaxFiles
	}
}

// Source says where a configuration came from, for the boot log.
type Source struct {
	Path     string // "" when no file was read
	Explicit bool   // named by --config or GARRAIA_CONFIG
}

// Load reads the config file. flagPath (from --config) wins over
// $GARRAIA_CONFIG, which wins over ~/.garraia/config.yml. A missing default
// file yields the built-in defaults; a missing explicit file is an error.
// Environment overrides are applied last (env beats file).
func Load(flagPath string, getenv func(string) string) (*Config, Source, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	src := Source{Path: flagPath, Explicit: flagPath != ""}
	if src.Path == "" {
		if p := getenv(EnvConfigPath); p != "" {
			src = Source{Path: p, Explicit: true}
		}
	}
	if src.Path == "" {
		home, err := os.UserHomeDir()
		if err == nil {
			src.Path = filepath.Join(home, ".garraia", "config.yml")
		}
	}
	cfg := &Config{}
	if src.Path != "" {
		data, err := os.ReadFile(expandHome(src.Path))
		switch {
		case err == nil:
			if cfg, err = FromBytes(data, getenv); err != nil {
				return nil, src, fmt.Errorf("config %s: %w", src.Path, err)
			}
			return cfg, src, nil
		case errors.Is(err, fs.ErrNotExist) && !src.Explicit:
			src.Path = ""
		default:
			return nil, src, fmt.Errorf("read config: %w", err)
		}
	}
	cfg.applyDefaults()
	cfg.applyEnv(getenv)
	return cfg, src, nil
}

// FromBytes is Load of a file's content already read: Parse, then the
// defaults, then the environment overrides. A process that re-reads its
// file uses it so that what it hashes is exactly what it parsed.
func FromBytes(data []byte, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg, err := Parse(data)
	if err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	cfg.applyEnv(getenv)
	return cfg, nil
}

// Parse decodes config.yml strictly: an unknown key is an error naming it.
// Defaults are not applied.
func Parse(data []byte) (*Config, error) {
	cfg := &Config{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *Config) applyEnv(getenv func(string) string) {
	if v := getenv(EnvGatewayAPIKey); v != "" {
		c.Gateway.APIKey = v
	}
	if v := getenv(EnvExecutionProfile); v != "" {
		c.Execution.Profile = v
	}
	if v := getenv(EnvBraveAPIKey); v != "" {
		c.LLM.Brave.APIKey = v
	}
}

// DataDirPath is data_dir with a leading ~ expanded.
func (c *Config) DataDirPath() string { return expandHome(c.DataDir) }

// AuditPath is audit.path with a leading ~ expanded, or
// <data_dir>/audit.jsonl when it is unset. It is resolved when asked, so a
// data_dir changed after loading still moves the default with it.
func (c *Config) AuditPath() string {
	if c.Audit.Path != "" {
		return expandHome(c.Audit.Path)
	}
	return filepath.Join(c.DataDirPath(), DefaultAuditFile)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}
