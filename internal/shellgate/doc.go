// Package shellgate decides whether a command line the model wants to run
// through the bash tool may run at all.
//
// The MCP bash tool has no human in the loop: a stateless tool call has no
// conversation in which anyone could confirm a risky command, so every rule
// here is fail-closed. A command is blocked when it matches the destructive
// DENY tier (rm -rf /, mkfs, dd to a device, fork bombs, shutdown, …) or the
// risky tier (network-capable programs, mutating subcommands such as git push,
// environment dumps, pipes into a shell, /proc/*/environ reads, inline code
// for interpreters, …). Anything the gate cannot analyse statically — a parse
// error, a command name that is not a literal word, inline code that is not a
// literal string — is blocked too.
//
// The decision is made on the syntax tree produced by mvdan.cc/sh (bash
// dialect), never by regular expressions over the raw text, so quoting
// ("cu"'rl', c\url, $'\x63url'), wrappers (sudo, env, timeout, xargs, …),
// subshells, command and process substitutions, here-documents, functions and
// nested bash -c strings are all looked through.
//
// This is a seatbelt, not a sandbox. It is a deny list over a Turing-complete
// language: interpreter script files (bash payload.sh, bash < payload.sh,
// python3 tool.py), programs it has never heard of and sufficiently creative
// encodings will get past it. Real containment is the kernel's: on the host
// each call runs in a Landlock domain that writes only its workspace and
// private TMPDIR and cannot reach garra's config, credentials or other
// processes; in a sandbox the pod is the boundary. So the gate no longer
// models every way a program can open a file: it stops the obvious and the
// careless, and what the kernel cannot see (code hidden from it, fork
// bombs, git's hooks and config, the machine's devices). Where the network
// is decided outside the process (a sandbox pod's NetworkPolicy, an empty
// network namespace, a container without a network), Policy.NetworkBounded
// turns the network rules off rather than keep two answers to one question.
//
// Policy choices worth knowing:
//
//   - rm: recursive removal (-r, -R, --recursive, --recur, in any spelling,
//     with or without -f) is allowed only on plain relative paths inside the
//     working tree (no "..", not ".", not a bare wildcard such as * or .*,
//     not .git, no expansions) or below /tmp and /var/tmp; so rm -rf build
//     passes and rm -rf /, ~, $HOME, .., * or /usr/lib do not. Non-recursive
//     rm is allowed except on /, ~, bare wildcards and system directories.
//     rm with an unquoted $var or $(…) is blocked because it can split into
//     "-rf /", and xargs rm -r is blocked because its targets are unknown.
//     chmod/chown/chgrp -R follow the same target rule.
//   - Interpreters may run script files (python3 script.py, bash build.sh,
//     node index.js, make), as the spec says they can; inline code (-c, -e,
//     eval, here-documents and pipes into an interpreter, programs read from
//     /dev/stdin or <(…)) is blocked, except that literal bash -c / sh -c /
//     eval / trap / alias strings and literal here-documents fed to a shell
//     are parsed and gated recursively.
//   - awk is allowed unless its program can run commands or read the
//     environment (system(), print | cmd, cmd | getline, ENVIRON, /inet,
//     @load); sed is allowed unless its script uses the e command or the
//     s///e flag.
//   - find -delete, -execdir/-okdir and -exec rm are blocked; other
//     -exec commands are gated like any command. dd with of= is blocked
//     whatever the target.
//   - Writes (redirections, tee, cp, mv, ln, install, sed -i, truncate) into
//     system directories, block devices, .git, ~/.ssh and shell start-up
//     files are blocked.
//   - Words are judged by what they may expand to. Assignments, loops,
//     reads and command substitutions are followed through the script:
//     text it spells out keeps its pattern, integers and names printed by
//     programs such as pwd, mktemp, git rev-parse or find . stay harmless,
//     and anything else a program prints or a read receives is run-time
//     text. A path pattern is sensitive when it could match
//     /proc/*/environ, /proc/*/mem, another process's fds, /run/secrets or
//     a write into a system directory or .git, in any glob, brace,
//     variable or symlink-alias spelling. Run-time text may be an
//     argument (git tag "v$(cat VERSION)"): what it names is read as the
//     kernel allows. It may not be a write target, which could be .git,
//     nor be evaluated by arithmetic (a[$(…)] subscripts run code).
//   - The working directory is followed through cd, pushd and popd, so
//     relative writes are judged where they land; after a cd to a run-time
//     path they are blocked.
//   - Options that carry code are recognised in every abbreviation their
//     parsers accept (tar --to-c, make --ev, git clone --upload-p), and
//     variables that carry options (NODE_OPTIONS, TAR_OPTIONS, MAKEFLAGS,
//     npm_config_*) are judged as the tool's command line.
//   - A program keeps its rules under another name: copying or linking it
//     to a name classified differently, writing its file's content
//     elsewhere, exec -a and the dynamic loader are refused or looked
//     through; aliases are expanded and functions are judged at their calls
//     with the caller's arguments.
//   - Fork bombs: recursive functions (also through eval and sh -c in
//     their bodies), and endless or huge loops that start background jobs
//     without waiting.
//   - Network clients are blocked by name, including cloud and database
//     CLIs; git clone/fetch/pull and package installs are not, as they are
//     part of ordinary development and the sandbox has no network anyway.
//     Service and cluster managers (systemctl, kubectl, docker, helm) are
//     limited to their read-only subcommands.
package shellgate
