package config

// SecretValues returns the value of every secret c holds or names in an
// environment variable that getenv resolves or in a secret file (read with
// ReadSecretFile): the gateway key, the Brave
// key, the API key of each provider kind and alias (and of the default
// variables, OPENAI_API_KEY and the like, wherever the config points),
// each orchestrator's token, sandbox token and credentials, and the Telegram bot
// token. Unset variables are
// skipped; the order is stable and values are not repeated. The process
// holds all of them, so all of them are registered with its redactors
// (redact.Redactor.WithSecrets) to be redacted whatever their shape.
func (c *Config) SecretValues(getenv func(string) string) []string {
	return c.SecretValuesWith(getenv, nil)
}

// SecretValuesWith is SecretValues with the secret files read by read
// (nil: the disk).
func (c *Config) SecretValuesWith(getenv func(string) string, read SecretReader) []string {
	read = read.orDisk()
	var out []string
	// A set beside the list: a gateway of a thousand orchestrators holds
	// thousands of tokens, and a scan per value made this quadratic.
	seen := map[string]bool{}
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	env := func(name string) {
		if name != "" && getenv != nil {
			add(getenv(name))
		}
	}
	// A file the config names is read here too, each on its own (even
	// when its entry also names a variable, which is a Check problem), so
	// that whatever the process may have loaded from it is redacted.
	file := func(path string) {
		if path != "" {
			if v, err := read(path); err == nil {
				add(v)
			}
			// Each line on its own too: a token file may hold several.
			if lines, err := read.Lines(path); err == nil && len(lines) > 1 {
				for _, l := range lines {
					add(l)
				}
			}
		}
	}
	add(c.Gateway.APIKey)
	file(c.Gateway.APIKeyFile)
	add(c.LLM.Brave.APIKey)
	for _, name := range c.ProviderNames() {
		if ref, err := c.ResolveProvider(name); err == nil {
			env(ref.APIKeyEnv)
		}
	}
	// The default variables too, when the config points elsewhere: they
	// are still in this process's environment.
	for _, kind := range ProviderKinds {
		env(DefaultAPIKeyEnv[kind])
	}
	for _, o := range c.Gateway.MCPHTTP.Orchestrators {
		env(o.KeyEnv)
		file(o.KeyFile)
		if o.Sandbox != nil {
			env(o.Sandbox.TokenEnv)
			file(o.Sandbox.TokenFile)
		}
		for _, cr := range o.Credentials {
			file(cr.File)
		}
	}
	env(c.Channels.Telegram.BotTokenEnv)
	// The store's DSN holds the database password.
	env(c.Store.DSNEnv)
	file(c.Store.DSNFile)
	return out
}
