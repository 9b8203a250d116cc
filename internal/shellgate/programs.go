package shellgate

import (
	"regexp"
	"sync"
)

// The tables of this package are built on first use (sync.OnceValue),
// not at start: a process that never gates a command, such as
// garra mcp-server without garra_agent, does not pay for them.
//
// This file holds the tables: which programs are blocked outright, which
// wrap another command, which interpret code, and which subcommands mutate
// something outside the working tree. Names are matched on the lower-cased
// basename of the resolved command word, so /usr/bin/curl, ./CURL and
// 'cu''rl' all hit "curl".

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// networkPrograms can move data off the machine (or pull code onto it);
// with no one to confirm, they are blocked whatever their arguments.
var networkPrograms = sync.OnceValue(func() map[string]bool {
	return set(
		"curl", "curlie", "wget", "wget2", "aria2c", "axel", "http", "https", "httpie", "xh",
		"ssh", "scp", "sftp", "slogin", "sshpass", "autossh", "ssh-copy-id", "ssh-agent", "ssh-add", "mosh",
		"nc", "ncat", "netcat", "nc.openbsd", "nc.traditional", "socat", "websocat", "telnet",
		"ftp", "tftp", "lftp", "ncftp", "rsync", "rcp", "rsh", "rlogin", "rexec",
		"nmap", "masscan", "tcpdump", "tshark", "dig", "nslookup", "host", "drill", "whois",
		"ping", "ping6", "traceroute", "tracepath", "mtr", "iperf", "iperf3",
		"lynx", "links", "w3m", "elinks", "xdg-open", "sensible-browser", "firefox", "chromium",
		"chromium-browser", "google-chrome",
		"mail", "mailx", "sendmail", "mutt", "msmtp", "swaks", "smbclient", "ldapsearch",
		"aws", "gcloud", "gsutil", "az", "doctl", "s3cmd", "rclone", "gh", "glab", "hub",
		"ngrok", "cloudflared", "tailscale", "openvpn", "wg", "wg-quick",
		"psql", "mysql", "mariadb", "mongo", "mongosh", "redis-cli", "grpcurl",
		"sshfs", "s5cmd", "azcopy", "kcat", "kafkacat", "mosquitto_pub", "mosquitto_sub",
	)
})

// destructivePrograms belong to the DENY tier: they wipe disks, take the
// machine down or rewrite system state, and have no place in an agent run.
var destructivePrograms = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"mkfs": "filesystem format", "mke2fs": "filesystem format", "mkswap": "filesystem format",
		"mkdosfs": "filesystem format", "wipefs": "disk wipe", "shred": "secure file wipe",
		"blkdiscard": "disk wipe", "fdisk": "disk partitioning", "sfdisk": "disk partitioning",
		"cfdisk": "disk partitioning", "gdisk": "disk partitioning", "sgdisk": "disk partitioning",
		"parted": "disk partitioning", "cryptsetup": "disk encryption", "mdadm": "RAID administration",
		"lvremove": "volume removal", "vgremove": "volume removal", "pvremove": "volume removal",
		"shutdown": "system power command", "reboot": "system power command", "halt": "system power command",
		"poweroff": "system power command", "telinit": "system power command", "init": "system power command",
		"kexec": "system power command", "killall5": "kill every process",
		"insmod": "kernel module change", "rmmod": "kernel module change", "modprobe": "kernel module change",
		"mount": "mount change", "umount": "mount change", "swapon": "swap change", "swapoff": "swap change",
		"losetup": "loop device change", "iptables": "firewall change", "ip6tables": "firewall change",
		"nft": "firewall change", "ufw": "firewall change", "firewall-cmd": "firewall change",
		"useradd": "account change", "userdel": "account change", "usermod": "account change",
		"groupadd": "account change", "groupdel": "account change", "passwd": "account change",
		"chpasswd": "account change", "chsh": "account change", "visudo": "sudoers change",
		"sudoedit": "editing files as root", "setenforce": "security policy change",
		"crontab": "scheduled job change", "at": "scheduled job", "batch": "scheduled job",
		"systemd-run": "transient system service", "tmux": "detached shell", "screen": "detached shell",
		"gdb": "debugger can run arbitrary commands", "lldb": "debugger can run arbitrary commands",
	}
})

// shells are parsed recursively when given literal code with -c.
var shells = sync.OnceValue(func() map[string]bool {
	return set(
		"sh", "bash", "rbash", "dash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "ash", "yash",
		"posh", "fish", "csh", "tcsh", "elvish", "nu", "xonsh", "osh", "ysh",
	)
})

// wrapSpec describes a program that runs another command given as its
// remaining arguments. Unknown options make the position of the wrapped
// command ambiguous; every possible position is then gated.
type wrapSpec struct {
	shortArg  string   // short options taking a value (attached or next word)
	shortFlag string   // short options without a value
	longArg   []string // long options taking a value when not written --x=v
	longFlag  []string // long options without a value
	operands  int      // positional arguments before the command (timeout's duration)
	scanAll   bool     // option grammar too irregular: gate every possible suffix
	dynTail   bool     // appends run-time arguments to the command (xargs)
	noCmd     string   // verdict when no command is given ("" = allowed)
}

var wrappers = sync.OnceValue(func() map[string]wrapSpec {
	return map[string]wrapSpec{
		"sudo": {shortArg: "CDghpRrtTUu", shortFlag: "AbEeHiKklnPSsVv",
			longArg:  []string{"--user", "--group", "--host", "--prompt", "--chdir", "--chroot", "--role", "--type", "--command-timeout", "--other-user", "--close-from"},
			longFlag: []string{"--preserve-env", "--login", "--shell", "--non-interactive", "--background", "--edit", "--set-home", "--stdin", "--askpass", "--list", "--validate", "--reset-timestamp", "--remove-timestamp"}},
		"doas":    {shortArg: "uC", shortFlag: "ns"},
		"pkexec":  {longArg: []string{"--user"}, longFlag: []string{"--keep-cwd", "--disable-internal-agent"}},
		"nice":    {shortArg: "n", longArg: []string{"--adjustment"}},
		"nohup":   {},
		"setsid":  {shortFlag: "cfw", longFlag: []string{"--ctty", "--fork", "--wait"}},
		"timeout": {shortArg: "sk", shortFlag: "v", longArg: []string{"--signal", "--kill-after"}, longFlag: []string{"--preserve-status", "--foreground", "--verbose"}, operands: 1},
		"stdbuf":  {shortArg: "ioe", longArg: []string{"--input", "--output", "--error"}},
		"xargs": {shortArg: "adEInLPs", shortFlag: "0eilprtxo",
			longArg:  []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"},
			longFlag: []string{"--null", "--no-run-if-empty", "--interactive", "--verbose", "--exit", "--open-tty", "--show-limits"},
			dynTail:  true},
		"command":  {shortFlag: "pvV"},
		"builtin":  {},
		"exec":     {shortArg: "a", shortFlag: "cl"},
		"time":     {shortArg: "fo", shortFlag: "apqvV", longArg: []string{"--format", "--output"}, longFlag: []string{"--append", "--portability", "--quiet", "--verbose"}},
		"ionice":   {shortArg: "cnpPu", shortFlag: "t"},
		"chroot":   {longArg: []string{"--userspec", "--groups"}, longFlag: []string{"--skip-chdir"}, operands: 1, noCmd: "interactive shell via chroot"},
		"taskset":  {shortFlag: "acp", operands: 1},
		"chrt":     {shortArg: "TPD", shortFlag: "abdefiormpvR", operands: 1},
		"unbuffer": {shortFlag: "p"},
		"rlwrap":   {scanAll: true},
		"faketime": {shortArg: "m", shortFlag: "f", operands: 1},
		"fakeroot": {scanAll: true}, "fakechroot": {scanAll: true},
		"catchsegv": {}, "caffeinate": {scanAll: true}, "cpulimit": {scanAll: true},
		"numactl": {scanAll: true}, "unshare": {scanAll: true}, "nsenter": {scanAll: true},
		"bwrap": {scanAll: true}, "firejail": {scanAll: true}, "prlimit": {scanAll: true},
		"setpriv": {scanAll: true}, "runcon": {scanAll: true}, "valgrind": {scanAll: true},
		"strace": {scanAll: true}, "ltrace": {scanAll: true}, "proxychains": {scanAll: true},
		"proxychains4": {scanAll: true}, "torsocks": {scanAll: true}, "tsocks": {scanAll: true},
		"dbus-run-session": {scanAll: true}, "dbus-launch": {scanAll: true}, "flatpak-spawn": {scanAll: true},
		"npx":  {shortArg: "p", longArg: []string{"--package"}, longFlag: []string{"--yes", "--no", "--quiet", "--no-install"}},
		"bunx": {scanAll: true}, "pnpx": {scanAll: true}, "uvx": {longArg: []string{"--from", "--with", "--python"}},
		// Grammars handled by hand in wrap.go.
		"env": {}, "su": {}, "runuser": {}, "sg": {}, "watch": {}, "flock": {}, "script": {},
		"busybox": {}, "toybox": {}, "nix-shell": {},
		"parallel": {}, "watchexec": {}, "fd": {}, "fdfind": {}, "entr": {scanAll: true},
	}
})

// subcommandWrappers are "tool subcommand" pairs that run the command in
// their remaining arguments (uv run pytest, npm exec -- tsc).
var subcommandWrappers = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"uv": set("run"), "poetry": set("run"), "pipenv": set("run"), "pdm": set("run"),
		"hatch": set("run"), "rye": set("run"), "pipx": set("run"), "conda": set("run"),
		"mamba": set("run"), "micromamba": set("run"), "bundle": set("exec"),
		"npm": set("exec", "x"), "pnpm": set("exec", "dlx"), "yarn": set("exec", "dlx"),
		"bun": set("x"), "nix": set("develop", "shell"),
	}
})

// mutating lists subcommands that publish, deploy or change state outside
// the working tree, for tools where everything else is ordinary development.
var mutating = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"npm":       set("publish", "unpublish", "deprecate", "owner", "adduser", "add-user", "login", "logout", "token", "access", "dist-tag", "hook", "team", "org", "star", "unstar", "profile", "set"),
		"pnpm":      set("publish", "login", "logout", "adduser"),
		"yarn":      set("publish", "login", "logout", "npm"),
		"bun":       set("publish"),
		"cargo":     set("publish", "login", "logout", "owner", "yank"),
		"gem":       set("push", "owner", "yank", "signin"),
		"twine":     set("upload", "register"),
		"poetry":    set("publish"),
		"uv":        set("publish"),
		"flit":      set("publish"),
		"hatch":     set("publish"),
		"mvn":       set("deploy", "release:perform", "release:prepare"),
		"terraform": set("apply", "destroy", "import", "taint", "untaint", "force-unlock", "login", "logout", "state", "console"),
		"tofu":      set("apply", "destroy", "import", "taint", "untaint", "force-unlock", "login", "logout", "state", "console"),
		"pulumi":    set("up", "destroy", "import", "refresh", "cancel", "stack", "login", "logout"),
		"zfs":       set("destroy", "rollback"),
		"zpool":     set("destroy", "labelclear"),
		"openssl":   set("s_client", "s_server", "s_time", "ocsp"),
		"deno":      set("eval", "repl"),
		"vsce":      set("publish", "unpublish"),
		"ovsx":      set("publish"),
		"dotnet":    set("nuget"),
	}
})

// readOnly lists the only subcommands allowed for cluster and service
// managers, where almost everything else changes running systems.
var readOnly = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"systemctl":   set("status", "show", "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies", "list-jobs", "is-active", "is-enabled", "is-failed", "is-system-running", "cat", "help", "get-default"),
		"kubectl":     set("get", "describe", "logs", "explain", "api-resources", "api-versions", "version", "top", "cluster-info", "help", "completion"),
		"oc":          set("get", "describe", "logs", "explain", "api-resources", "api-versions", "version", "whoami", "status", "help"),
		"docker":      set("ps", "images", "inspect", "logs", "version", "info", "top", "history", "port", "stats", "events", "diff", "search", "help"),
		"podman":      set("ps", "images", "inspect", "logs", "version", "info", "top", "history", "port", "stats", "events", "diff", "search", "help"),
		"nerdctl":     set("ps", "images", "inspect", "logs", "version", "info", "top", "history", "port", "stats", "events", "help"),
		"helm":        set("template", "lint", "list", "ls", "status", "get", "show", "inspect", "version", "history", "help", "search", "env", "verify", "create"),
		"launchctl":   set("list", "print", "help", "version"),
		"hostnamectl": set("status"),
		"timedatectl": set("status", "show", "list-timezones"),
		"localectl":   set("status", "list-locales", "list-keymaps"),
	}
})

// dockerReadOnly lists second-level subcommands allowed under docker's
// management commands (docker image ls, docker compose ps).
var dockerReadOnly = sync.OnceValue(func() map[string]bool {
	return set("ls", "list", "ps", "inspect", "logs", "history", "top", "port", "df", "info", "version", "config", "images", "help")
})

// globalArgFlags are options taking a value that may precede the subcommand.
var globalArgFlags = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"git":       set("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env", "--attr-source", "--list-cmds"),
		"kubectl":   set("-n", "--namespace", "--context", "--cluster", "--user", "--kubeconfig", "-s", "--server", "--token", "--as", "--as-group", "--request-timeout", "-v", "--certificate-authority", "--client-certificate", "--client-key"),
		"oc":        set("-n", "--namespace", "--context", "--cluster", "--user", "--kubeconfig", "-s", "--server", "--token", "--as"),
		"docker":    set("-H", "--host", "-c", "--context", "--config", "-l", "--log-level", "--tlscacert", "--tlscert", "--tlskey"),
		"podman":    set("--url", "--connection", "-c", "--root", "--runroot", "--storage-driver", "--log-level", "--cgroup-manager", "--identity", "--module"),
		"nerdctl":   set("-n", "--namespace", "-a", "--address", "--host", "-H", "--snapshotter", "--cgroup-manager"),
		"helm":      set("-n", "--namespace", "--kube-context", "--kubeconfig", "--registry-config", "--repository-config", "--repository-cache"),
		"systemctl": set("-H", "--host", "-M", "--machine", "-t", "--type", "-p", "--property", "-o", "--output", "-n", "--lines", "--state", "--root"),
		"terraform": set("-chdir"),
		"tofu":      set("-chdir"),
		"npm":       set("-w", "--workspace", "--prefix", "-C"),
		"pnpm":      set("-C", "--dir", "-F", "--filter", "-w"),
		"yarn":      set("--cwd"),
		"cargo":     set("-C", "--config", "-Z", "--color", "--manifest-path"),
	}
})

// codeVars are variables whose value bash, git or a pager will run.
const (
	varBlock   = 1 + iota // assignment blocked outright
	varCommand            // value is a command line: gate it
	varPrompt             // prompt string: block command substitutions
)

var codeVars = sync.OnceValue(func() map[string]int {
	return map[string]int{
		"LD_PRELOAD": varBlock, "LD_AUDIT": varBlock, "BASH_ENV": varBlock, "ENV": varBlock,
		"SHELLOPTS": varBlock, "BASHOPTS": varBlock, "LESSOPEN": varBlock, "LESSCLOSE": varBlock,
		"GIT_CONFIG_PARAMETERS": varBlock, "GIT_CONFIG_COUNT": varBlock, "GIT_EXEC_PATH": varBlock,
		"GIT_TEMPLATE_DIR": varBlock, "GIT_CONFIG_GLOBAL": varBlock, "GIT_CONFIG_SYSTEM": varBlock, "GIT_CONFIG": varBlock, "BASH_LOADABLES_PATH": varBlock, "PROMPT_COMMAND": varCommand,
		"GIT_SSH": varCommand, "GIT_SSH_COMMAND": varCommand, "GIT_PROXY_COMMAND": varCommand,
		"GIT_EXTERNAL_DIFF": varCommand, "GIT_ASKPASS": varCommand, "SSH_ASKPASS": varCommand,
		"SUDO_ASKPASS": varCommand, "GIT_EDITOR": varCommand, "GIT_SEQUENCE_EDITOR": varCommand,
		"GIT_PAGER": varCommand, "PAGER": varCommand, "MANPAGER": varCommand, "EDITOR": varCommand,
		"VISUAL": varCommand, "BROWSER": varCommand, "FCEDIT": varCommand,
		"PS0": varPrompt, "PS1": varPrompt, "PS2": varPrompt, "PS3": varPrompt, "PS4": varPrompt,
		"PERL5DB": varBlock, "RIPGREP_CONFIG_PATH": varBlock, "BASH_CMDS": varBlock, "BASH_ALIASES": varBlock,
		"PYTHONSTARTUP": varBlock, "RUSTC": varCommand, "RUSTDOC": varCommand, "CC": varCommand,
		"CXX": varCommand, "CPP": varCommand, "LD": varCommand, "AR": varCommand, "AS": varCommand,
		"FC": varCommand, "PKG_CONFIG": varCommand, "MAKE": varCommand,
		"SYSTEMD_PAGER": varCommand, "SYSTEMD_EDITOR": varCommand,
	}
})

// Interpreters other than shells. Versioned names (python3.12, perl5.36,
// nodejs) are matched by interpreterRe.
var interpreterRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(python|pypy|perl|ruby|node|php|lua|luajit)(js|[0-9][0-9.]*)?$`)
})

// otherInterp lists interpreters with a simpler option grammar: the flags
// that take inline code, and whether running them without a script reads
// code from stdin (true) or just prints help (false).
type interpSpec struct {
	lang      string
	codeFlags []string
	stdin     bool
}

var otherInterp = sync.OnceValue(func() map[string]interpSpec {
	return map[string]interpSpec{
		"rscript":    {"R", []string{"-e", "--expr"}, false},
		"r":          {"R", []string{"-e"}, true},
		"julia":      {"Julia", []string{"-e", "-E", "--eval", "--print"}, true},
		"osascript":  {"AppleScript", []string{"-e"}, true},
		"expect":     {"Expect", []string{"-c"}, true},
		"tclsh":      {"Tcl", nil, true},
		"wish":       {"Tcl", nil, true},
		"pwsh":       {"PowerShell", []string{"-c", "-command", "-encodedcommand", "-ec", "-e", "-enc", "-cwa", "-commandwithargs"}, true},
		"powershell": {"PowerShell", []string{"-c", "-command", "-encodedcommand", "-ec", "-e", "-enc"}, true},
		"groovy":     {"Groovy", []string{"-e"}, false},
		"scala":      {"Scala", []string{"-e"}, true},
		"clojure":    {"Clojure", []string{"-e", "--eval"}, true},
		"clj":        {"Clojure", []string{"-e", "--eval"}, true},
		"racket":     {"Racket", []string{"-e", "--eval", "-c"}, true},
		"guile":      {"Guile", []string{"-c"}, true},
		"sbcl":       {"Lisp", []string{"--eval"}, true},
		"ghc":        {"Haskell", []string{"-e"}, false},
		"ghci":       {"Haskell", []string{"-e"}, true},
		"elixir":     {"Elixir", []string{"-e", "--eval"}, false},
		"iex":        {"Elixir", []string{"-e"}, true},
		"erl":        {"Erlang", []string{"-eval", "-s", "-run"}, true},
		"swift":      {"Swift", []string{"-e"}, false},
		"irb":        {"Ruby", nil, true},
		"jshell":     {"Java", nil, true},
		"jrunscript": {"JavaScript", []string{"-e"}, true},
	}
})

// pythonModules run a server or evaluate code given on the command line.
var pythonModules = sync.OnceValue(func() map[string]bool {
	return set("http.server", "simplehttpserver", "cgihttpserver", "smtpd", "xmlrpc.server",
		"webbrowser", "timeit", "code", "asyncio", "pydoc", "ftplib", "telnetlib", "pty", "idlelib",
		"pdb", "ipdb", "pudb", "ipykernel", "jupyter", "notebook", "ipython")
})

// pythonRunners run another script or module given after them.
var pythonRunners = sync.OnceValue(func() map[string]bool {
	return set("cProfile", "profile", "trace", "runpy", "coverage", "pyinstrument")
})

// gitDenied are git subcommands that publish, hand out credentials or run
// arbitrary filters.
var gitDenied = sync.OnceValue(func() map[string]bool {
	return set("push", "send-email", "send-pack", "credential", "credential-store",
		"credential-cache", "credential-osxkeychain", "credential-libsecret", "daemon", "http-push",
		"imap-send", "filter-branch", "instaweb", "upload-pack", "receive-pack", "fast-import",
		"web--browse", "filter-repo", "maintenance", "upload-archive", "shell", "http-fetch")
})

// gitCommandKeys hold a command line that git runs; the value is gated.
var gitCommandKeys = sync.OnceValue(func() map[string]bool {
	return set("core.pager", "core.editor", "sequence.editor", "core.sshcommand",
		"core.askpass", "gpg.program", "diff.external", "core.gitproxy")
})

// gitBlockedKeyRe matches configuration keys that make git run programs,
// send data elsewhere or load more configuration.
var gitBlockedKeyRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(alias\..*|credential\..*|filter\..*|diff\..*\.(textconv|command)|merge\..*\.driver|core\.fsmonitor|core\.hookspath|include\.path|includeif\..*|url\..*|remote\..*|uploadpack\..*|receivepack\..*|http\..*proxy|protocol\..*|submodule\..*\.update|gpg\..*\.program|core\.worktree|` +
		`interactive\.difffilter|core\.alternaterefscommand|trailer\..*\.(command|cmd)|(man|browser|difftool|mergetool|guitool)\..*\.(cmd|path)|web\.browser|init\.templatedir|sendemail\..*|imap\..*|lfs\..*)$`)
})

// systemDirs are top-level directories holding the OS: writing there, or
// removing anything there, is never part of an agent's job.
var systemDirs = sync.OnceValue(func() []string {
	return []string{"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt",
		"proc", "root", "run", "sbin", "srv", "sys", "usr", "var", "snap", "nix", "System", "Library",
		"private", "Applications"}
})

// writableDev are device files a command may legitimately write to.
var writableDev = sync.OnceValue(func() map[string]bool {
	return set("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/full")
})

// sensitiveNames are files that run code at login or hold credentials.
var sensitiveNames = sync.OnceValue(func() map[string]bool {
	return set(".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".gitconfig", ".netrc", ".npmrc", ".pypirc",
		"authorized_keys", ".ssh", ".garraia", ".git", ".gnupg", ".aws", ".kube", ".docker")
})
