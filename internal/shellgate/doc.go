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
// language: interpreter script files (bash payload.sh, python3 tool.py),
// programs it has never heard of and sufficiently creative encodings will get
// past it. Real containment is the container or pod the bash tool runs in
// (no network, dropped capabilities, only the working directory mounted);
// the gate only stops the obvious and the careless before they reach it.
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
//   - Network clients are blocked by name, including cloud and database
//     CLIs; git clone/fetch/pull and package installs are not, as they are
//     part of ordinary development and the sandbox has no network anyway.
//     Service and cluster managers (systemctl, kubectl, docker, helm) are
//     limited to their read-only subcommands.
package shellgate
