package shellgate

import (
	"strings"
)

// subcommandAt finds a tool's subcommand after its global options. It
// returns the candidate positions: the first operand, plus the next one when
// an unknown option before it may have taken a value.
func subcommandAt(args []arg, from int, argFlags map[string]bool) []int {
	amb := false
	for i := from; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			return []int{i}
		}
		v := a.val
		switch {
		case v == "--":
			if i+1 < len(args) {
				return []int{i + 1}
			}
			return nil
		case len(v) > 1 && v[0] == '-':
			name, _, hasValue := strings.Cut(v, "=")
			switch {
			case hasValue:
			case argFlags[name]:
				i++
			case len(v) > 2 && v[1] != '-' && argFlags[v[:2]]:
				// value attached to a short option: -nfoo
			default:
				amb = true
			}
		default:
			cands := []int{i}
			if amb {
				for j := i + 1; j < len(args); j++ {
					if !args[j].isFlag() {
						cands = append(cands, j)
						break
					}
				}
			}
			return cands
		}
	}
	return nil
}

// subcommands applies the read-only allowlists, the mutating denylists and
// the "tool run CMD" wrappers.
func (c *checker) subcommands(prog string, cl callCtx) string {
	args := cl.args
	allow, isReadOnly := readOnly()[prog]
	deny, isMutating := mutating()[prog]
	runs, isRunner := subcommandWrappers()[prog]
	if prog == "docker-compose" {
		allow, isReadOnly = dockerReadOnly(), true
	}
	if !isReadOnly && !isMutating && !isRunner {
		return ""
	}
	cands := subcommandAt(args, 1, globalArgFlags()[prog])
	if len(cands) == 0 && prog == "deno" {
		return "interpreter \"deno\" reading code from stdin"
	}
	for _, i := range cands {
		a := args[i]
		if !a.lit {
			return "non-literal subcommand for " + q(prog)
		}
		sub := strings.ToLower(a.val)
		if isRunner && runs[sub] {
			if prog == "nix" {
				return c.nixRun(cl, i)
			}
			return c.gateRunner(cl, i+1)
		}
		if isMutating && deny[sub] {
			return "mutating subcommand " + q(prog+" "+sub)
		}
		if r := c.nestedSubcommand(prog, sub, cl, i); r != "" {
			return r
		}
		if isReadOnly && !allow[sub] && !isManagement(prog, sub) {
			return "mutating subcommand " + q(prog+" "+sub)
		}
	}
	return ""
}

// gateRunner gates the command after "uv run", "npm exec", … . Their own
// options are unknown, so a word after an option is tried as well.
func (c *checker) gateRunner(cl callCtx, from int) string {
	args := cl.args
	amb := 0
	i := from
	for ; i < len(args) && args[i].isFlag(); i++ {
		if args[i].val == "--" {
			i++
			break
		}
		if !strings.Contains(args[i].val, "=") {
			amb++
		}
	}
	if amb > maxAmbiguous {
		return c.scanAll(cl, i)
	}
	return c.gateFrom(cl, i, amb, false)
}

// nixRun: nix develop|shell … -c CMD runs CMD; without -c they open an
// interactive shell.
func (c *checker) nixRun(cl callCtx, from int) string {
	for i := from + 1; i < len(cl.args); i++ {
		if a := cl.args[i]; a.lit && (a.val == "-c" || a.val == "--command") {
			return c.gateCall(cl.with(cl.args[i+1:]))
		}
	}
	return "interactive shell (nix " + cl.args[from].val + ")"
}

// isManagement reports docker-style management commands whose second
// level is checked by nestedSubcommand.
func isManagement(prog, sub string) bool {
	switch prog {
	case "docker", "podman", "nerdctl":
		switch sub {
		case "container", "image", "volume", "network", "system", "context", "compose", "buildx",
			"builder", "manifest", "plugin", "secret", "config", "node", "service", "stack", "pod", "machine":
			return true
		}
	case "kubectl", "oc":
		return sub == "config" || sub == "auth" || sub == "rollout"
	case "helm":
		return sub == "repo" || sub == "plugin" || sub == "dependency" || sub == "dep"
	case "npm":
		return sub == "config" || sub == "c"
	}
	return false
}

// nestedSubcommand checks the second level of management commands.
func (c *checker) nestedSubcommand(prog, sub string, cl callCtx, i int) string {
	if !isManagement(prog, sub) {
		if prog == "deno" && (sub == "run" || sub == "install") {
			for _, a := range cl.args[i+1:] {
				if a.lit && (strings.HasPrefix(a.val, "http://") || strings.HasPrefix(a.val, "https://")) {
					return "remote code (deno " + sub + " URL)"
				}
			}
		}
		return ""
	}
	var ok map[string]bool
	flags := map[string]bool{}
	switch prog {
	case "docker", "podman", "nerdctl":
		ok = dockerReadOnly()
		if sub == "compose" {
			flags = set("-f", "--file", "-p", "--project-name", "--profile", "--env-file", "--project-directory", "--ansi", "--parallel", "--progress")
		}
	case "kubectl", "oc":
		ok = set("get-contexts", "current-context", "get-clusters", "can-i", "whoami", "status", "history")
	case "helm":
		ok = set("list", "ls")
	case "npm":
		ok = set("get", "list", "ls")
	}
	cands := subcommandAt(cl.args, i+1, flags)
	for _, j := range cands {
		a := cl.args[j]
		if !a.lit || !ok[strings.ToLower(a.val)] {
			return "mutating subcommand " + q(prog+" "+sub+" "+a.val)
		}
	}
	return ""
}

// git blocks publishing (push), credential access, remote rewiring, global
// configuration and every way of making git run an arbitrary program
// (-c core.sshCommand=…, ext:: URLs, --upload-pack, rebase --exec, …).
func (c *checker) git(cl callCtx) string {
	args := cl.args
	for _, a := range args[1:] {
		if !a.lit {
			continue
		}
		v := a.val
		switch {
		case strings.HasPrefix(v, "ext::") || strings.HasPrefix(v, "fd::"):
			return "git transport runs a command (" + clip(v, 8) + ")"
		case isLongOf(v, "upload-pack") || isLongOf(v, "receive-pack") || strings.HasPrefix(v, "--exec=") || strings.HasPrefix(v, "--exec-path="):
			return "git option runs a program (" + clip(v, 16) + ")"
		}
	}
	// Global options, with -c/--config-env checked as they go by.
	foreignDir := false
	i := 1
	for i < len(args) {
		a := args[i]
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			break
		}
		v := a.val
		switch {
		case v == "-c":
			if i+1 >= len(args) {
				return ""
			}
			if r := c.gitConfigPair(args[i+1]); r != "" {
				return r
			}
			i += 2
			continue
		case v == "--config-env" || strings.HasPrefix(v, "--config-env="):
			// key=ENVVAR: the value is whatever that variable holds.
			kv, _, _ := optValue(args, i, strings.TrimPrefix(v, "--config-env="), strings.Contains(v, "="))
			key, _, _ := strings.Cut(kv.val, "=")
			if r := c.gitKey(key, arg{}, true); r != "" {
				return r
			}
			if !strings.Contains(v, "=") {
				i++
			}
		case strings.HasPrefix(v, "-c"):
			if r := c.gitConfigPair(litArg(v[2:])); r != "" {
				return r
			}
		case v == "--git-dir" || strings.HasPrefix(v, "--git-dir="):
			dir, _, _ := optValue(args, i, strings.TrimPrefix(v, "--git-dir="), strings.Contains(v, "="))
			if !dir.lit || !strings.HasSuffix(strings.TrimRight(dir.val, "/"), ".git") {
				foreignDir = true
			}
			if !strings.Contains(v, "=") {
				i++
			}
		case globalArgFlags()["git"][v]:
			i++
		}
		i++
	}
	if i >= len(args) {
		return ""
	}
	if !args[i].lit {
		return "non-literal git subcommand"
	}
	sub := args[i].val
	rest := args[i+1:]
	// A bounded network decides where a push goes; its options
	// (--receive-pack, --exec) are still checked below.
	if (gitDenied()[sub] && !(sub == "push" && c.networkBounded())) || strings.HasPrefix(sub, "credential-") {
		return "mutating subcommand " + q("git "+sub)
	}
	if foreignDir {
		return "git directory outside .git (--git-dir); its config can run programs"
	}
	if r := c.gitSubOptions(sub, rest); r != "" {
		return r
	}
	switch sub {
	case "remote":
		for _, a := range rest {
			if a.isFlag() {
				continue
			}
			switch a.val {
			case "add", "set-url", "rename", "set-head":
				return "mutating subcommand " + q("git remote "+a.val)
			}
			break
		}
	case "config":
		return c.gitConfig(rest)
	case "submodule":
		for j, a := range rest {
			if a.lit && a.val == "foreach" {
				k := j + 1
				for k < len(rest) && rest[k].isFlag() {
					k++
				}
				return c.evalArgs("git submodule foreach", rest[k:])
			}
		}
	case "rebase", "difftool", "mergetool":
		for j, a := range rest {
			if !a.lit {
				continue
			}
			if val, has, ok := longOptIn(a.val, "exec", "extcmd"); ok {
				code, _, _ := optValue(rest, j, val, has)
				return c.codeArg("git "+sub+" "+clip(a.val, 12), code)
			}
			switch {
			case a.val == "-x":
				return c.codeValue("git "+sub+" "+a.val, rest, j, a.val)
			case strings.HasPrefix(a.val, "-x") && len(a.val) > 2 && sub == "rebase":
				return c.nested(a.val[2:])
			}
		}
	case "bisect":
		if len(rest) > 0 && rest[0].lit && rest[0].val == "run" {
			return c.gateCall(cl.with(rest[1:]))
		}
	}
	return ""
}

// gitSubOptions checks the options of git subcommands that run a program
// of the caller's choosing or install hooks.
func (c *checker) gitSubOptions(sub string, rest []arg) string {
	for j, a := range rest {
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			continue
		}
		v := a.val
		switch sub {
		case "clone", "ls-remote":
			if v == "-u" || strings.HasPrefix(v, "-u") && !strings.HasPrefix(v, "--") && sub == "ls-remote" {
				return "git option runs a program (" + sub + " -u)"
			}
		}
		switch sub {
		case "clone", "init":
			if isLongOf(v, "template") {
				return "git --template installs hooks from another directory"
			}
		case "archive":
			if isLongOf(v, "exec") {
				return "git option runs a program (archive --exec)"
			}
		case "grep":
			if val, has, ok := longOpt(v, "open-files-in-pager"); ok || strings.HasPrefix(v, "-O") {
				if strings.HasPrefix(v, "-O") {
					val, has = v[2:], len(v) > 2
				}
				if has {
					return c.codeArg("git grep -O", litArg(val))
				}
			}
		case "help":
			if v == "-w" || isLongOf(v, "web") || isLongOf(v, "browser") {
				return "git help --web runs a web browser"
			}
		}
		if sub == "clone" && (v == "-c" || isLongOf(v, "config")) {
			kv, _, ok := optValue(rest, j, strings.SplitN(v, "=", 2)[len(strings.SplitN(v, "=", 2))-1], strings.Contains(v, "="))
			if ok {
				if r := c.gitConfigPair(kv); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

// gitConfigPair checks one key=value given to git -c.
func (c *checker) gitConfigPair(a arg) string {
	if !a.lit {
		return "non-literal git -c value"
	}
	key, val, _ := strings.Cut(a.val, "=")
	return c.gitKey(key, litArg(val), true)
}

// gitKey decides on setting key to val.
func (c *checker) gitKey(key string, val arg, hasVal bool) string {
	k := strings.ToLower(key)
	switch {
	case gitBlockedKeyRe().MatchString(k):
		return "git config " + q(key) + " can run programs or redirect data"
	case gitCommandKeys()[k] || strings.HasPrefix(k, "pager."):
		if !hasVal {
			return ""
		}
		if !val.lit {
			return "non-literal command in git config " + q(key)
		}
		return c.nested(val.val)
	}
	return ""
}

// gitConfig handles "git config …": global/system scope and editing are
// blocked; setting a key that makes git run programs is blocked.
func (c *checker) gitConfig(rest []arg) string {
	var ops []arg
	write := false
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if !a.lit {
			ops = append(ops, a)
			continue
		}
		v := a.val
		switch {
		case v == "-e" || v == "-f" || isLongOf(v, "global") || isLongOf(v, "system") || isLongOf(v, "edit") || isLongOf(v, "file"):
			return "mutating subcommand " + q("git config "+v)
		case isLongOf(v, "add") || isLongOf(v, "replace-all") || isLongOf(v, "unset") || isLongOf(v, "unset-all") ||
			isLongOf(v, "rename-section") || isLongOf(v, "remove-section"):
			write = true
		case !strings.Contains(v, "=") && (isLongOf(v, "type") || isLongOf(v, "default") || isLongOf(v, "comment") || isLongOf(v, "blob")):
			j++
		case strings.HasPrefix(v, "-"):
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) > 0 && ops[0].lit {
		switch ops[0].val {
		case "edit":
			return "mutating subcommand " + q("git config edit")
		case "set", "unset", "rename-section", "remove-section":
			ops, write = ops[1:], true
		case "get", "list":
			return ""
		}
	}
	if len(ops) == 0 {
		return ""
	}
	if !ops[0].lit {
		return "non-literal git config key"
	}
	if len(ops) >= 2 || write {
		val := arg{lit: true}
		if len(ops) >= 2 {
			val = ops[1]
		}
		return c.gitKey(ops[0].val, val, true)
	}
	return ""
}

// serviceRule allows only "service NAME status" and "service --status-all".
func serviceRule(args []arg) string {
	if len(args) < 3 {
		return ""
	}
	a := args[2]
	if a.lit && (a.val == "status" || a.val == "--status-all" || a.val == "--help") {
		return ""
	}
	return "mutating subcommand " + q("service "+a.val)
}

// sysRule blocks network and kernel configuration changes while allowing
// the read-only forms of the same tools (ip addr, sysctl -a, hostname).
func sysRule(prog string, args []arg) string {
	var ops []arg
	for _, a := range args[1:] {
		if !a.isFlag() {
			ops = append(ops, a)
		}
	}
	switch prog {
	case "ip":
		for _, a := range args[1:] {
			if a.lit && (a.val == "-b" || strings.HasPrefix(a.val, "-batch") || a.val == "-force") {
				return "ip batch mode"
			}
		}
		for _, a := range ops {
			switch a.val {
			case "add", "del", "delete", "set", "flush", "change", "replace", "append", "prepend", "exec", "attach", "detach", "up", "down", "restore":
				return "network configuration change (ip " + a.val + ")"
			}
		}
	case "ifconfig":
		if len(ops) >= 2 {
			return "network configuration change (ifconfig)"
		}
	case "route":
		if len(ops) > 0 {
			switch ops[0].val {
			case "add", "del", "delete", "flush", "change", "append":
				return "network configuration change (route " + ops[0].val + ")"
			}
		}
	case "sysctl":
		for _, a := range args[1:] {
			if a.lit && (a.val == "-w" || a.val == "--write" || a.val == "-p" || strings.HasPrefix(a.val, "--load") || a.val == "--system" || strings.Contains(a.val, "=")) {
				return "kernel parameter change (sysctl)"
			}
		}
	case "hostname":
		for _, a := range args[1:] {
			if a.lit && (a.val == "-F" || strings.HasPrefix(a.val, "--file")) {
				return "hostname change"
			}
		}
		if len(ops) > 0 {
			return "hostname change"
		}
	}
	return ""
}
