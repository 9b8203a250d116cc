package shellgate

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
)

// pathKind classifies a path operand by how much damage removing or
// overwriting it can do. The working directory is unknown to a pure
// function, so "inside the working tree" means "relative, without ..".
type pathKind int

const (
	pathPlain    pathKind = iota // relative path below the working directory
	pathTmp                      // below /tmp or /var/tmp
	pathOther                    // absolute path elsewhere, e.g. /home/u/proj/x
	pathCwd                      // . itself
	pathParent                   // .. or ../x
	pathWildcard                 // *, .*, ?: every entry of the directory
	pathHome                     // ~, ~/, ~/*, ~+
	pathRoot                     // /, /*, //
	pathSystem                   // /etc, /usr/lib/x, /tmp itself, …
	pathDynamic                  // starts with an expansion: "$HOME", "$(pwd)"
	pathUnknown                  // holds run-time text, or lies under an unknown directory
)

var pathKindText = [...]string{
	pathPlain: "a relative path", pathTmp: "a temporary path", pathOther: "an absolute path outside /tmp",
	pathCwd: "the working directory", pathParent: "a parent directory", pathWildcard: "a bare wildcard",
	pathHome: "the home directory", pathRoot: "the root directory", pathSystem: "a system path",
	pathDynamic: "a run-time path", pathUnknown: "a path chosen at run time",
}

func classify(a arg) pathKind {
	p := a.pat
	switch {
	case p == "":
		return pathOther
	case strings.IndexByte(p, anyRun) >= 0:
		return pathUnknown
	case isDyn(p[0]):
		return pathDynamic
	case p[0] == '~':
		rest := ""
		if i := strings.IndexByte(p, '/'); i >= 0 {
			rest = p[i:]
		}
		c := path.Clean("/" + rest)
		if c == "/" || !hasLiteral(firstComp(c), ".") {
			return pathHome
		}
		return pathOther
	case p[0] == '/':
		c := path.Clean(p)
		if c == "/" {
			return pathRoot
		}
		comps := strings.Split(c[1:], "/")
		if !hasLiteral(comps[0], ".") {
			return pathRoot
		}
		switch {
		case strings.HasPrefix(c, "/tmp/") || strings.HasPrefix(c, "/var/tmp/"):
			return pathTmp
		case c == "/tmp":
			return pathSystem // /var is one anyway
		}
		for _, d := range systemDirs() {
			if match(comps[0], d) {
				return pathSystem
			}
		}
		return pathOther
	}
	c := path.Clean(p)
	switch {
	case c == ".":
		return pathCwd
	case c == ".." || strings.HasPrefix(c, "../"):
		return pathParent
	case !hasLiteral(firstComp(c), "."):
		return pathWildcard
	}
	return pathPlain
}

func firstComp(p string) string {
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

// hasComponent reports whether a literal path has a component named name.
func hasComponent(p, name string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == name {
			return true
		}
	}
	return false
}

// isLongPrefix reports whether v abbreviates the long option full, as
// getopt_long accepts (rm --recur, rm --no-pres).
func isLongPrefix(v, full string, minLen int) bool {
	return len(v) >= minLen && strings.HasPrefix(full, v)
}

// rmRule implements the policy in the package doc: recursive removal only
// of plain relative paths (or below /tmp), and never of /, ~, system
// directories or bare wildcards.
func (c *checker) rmRule(prog string, cl callCtx) string {
	recursive, maybe, endOpts := false, false, false
	var targets []arg
	for _, a := range cl.args[1:] {
		if a.split {
			return "unquoted expansion in " + prog + " arguments"
		}
		switch {
		case !endOpts && a.lit && a.val == "--":
			endOpts = true
			continue
		case !endOpts && a.isFlag():
			v := a.val
			if strings.HasPrefix(v, "--") {
				if isLongPrefix(v, "--no-preserve-root", 4) {
					return "rm --no-preserve-root"
				}
				if isLongPrefix(v, "--recursive", 3) {
					recursive = true
				}
				continue
			}
			if strings.ContainsAny(v, "rR") {
				recursive = true
			}
			continue
		case !endOpts && !a.lit:
			maybe = true // "$opt" may well be -rf
		}
		targets = append(targets, a)
	}
	if recursive && cl.dynTail {
		return "recursive rm on run-time arguments"
	}
	for _, t := range c.allTargets(targets) {
		k := classify(t)
		if recursive || maybe && t.lit {
			if !t.lit && recursive {
				return "recursive rm on a non-literal path"
			}
			if k != pathPlain && k != pathTmp {
				return fmt.Sprintf("recursive rm on dangerous target %s (%s)", q(t.val), pathKindText[k])
			}
			if hasComponent(t.val, ".git") {
				return "recursive rm of a .git directory"
			}
			continue
		}
		switch k {
		case pathRoot, pathHome, pathSystem, pathWildcard, pathUnknown:
			return fmt.Sprintf("rm on dangerous target %s (%s)", q(t.val), pathKindText[k])
		}
	}
	return ""
}

// find: -delete, -execdir/-okdir and -exec rm are blocked; other -exec
// commands are gated like any command.
func (c *checker) find(cl callCtx) string {
	args := cl.args
	inExpr := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			// "$x" could be -delete: only a quoted first starting point or
			// the value of a primary such as -name may be dynamic.
			if !(i == 1 && !a.split) && !(inExpr && findTakesArg(args[i-1])) {
				return "non-literal find expression"
			}
			continue
		}
		v := a.val
		if strings.HasPrefix(v, "-") || v == "(" || v == "!" {
			inExpr = true
		}
		switch v {
		case "-delete":
			return "find -delete"
		case "-execdir", "-okdir":
			return "find " + v
		case "-exec", "-ok":
			j := i + 1
			for j < len(args) && !(args[j].lit && (args[j].val == ";" || args[j].val == "+")) {
				j++
			}
			cmd := args[i+1 : j]
			if len(cmd) > 0 && strings.Contains(cmd[0].val, "{}") {
				return "find " + v + " runs the files it finds"
			}
			if codeHas(cmd, "{}") {
				// A file named $(curl x) would become code.
				return "find " + v + " puts file names into code"
			}
			if len(cmd) > 0 && cmd[0].lit {
				switch progName(cmd[0].val) {
				case "rm", "unlink", "rmdir", "shred", "srm", "wipe", "truncate", "dd":
					return "find " + v + " " + progName(cmd[0].val)
				}
			}
			if r := c.gateCall(cl.with(cmd)); r != "" {
				return r
			}
			i = j
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				if r := c.write(args[i+1], "find "+v); r != "" {
					return r
				}
			}
		}
	}
	return ""
}

var findArgPrimaries = sync.OnceValue(func() map[string]bool {
	return set("-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename",
		"-regex", "-iregex", "-lname", "-ilname", "-type", "-xtype", "-user", "-group", "-uid", "-gid",
		"-perm", "-size", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-links", "-inum",
		"-samefile", "-maxdepth", "-mindepth", "-fstype", "-used", "-printf", "-context", "-files0-from",
		"-regextype", "-newer", "-anewer", "-cnewer")
})

func findTakesArg(prev arg) bool {
	return prev.lit && (findArgPrimaries()[prev.val] || strings.HasPrefix(prev.val, "-newer"))
}

// ddRule blocks any dd that writes to a file or device (of=); reading into
// a pipe is fine. A non-literal operand could be of= too.
func ddRule(args []arg) string {
	for _, a := range args[1:] {
		if strings.HasPrefix(a.val, "of=") || strings.HasPrefix(a.pat, "of=") {
			return "dd of= (raw write)"
		}
		if !a.lit && (a.pat == "" || isDyn(a.pat[0]) || a.pat[0] == anySeg) {
			return "non-literal dd operand"
		}
	}
	return ""
}

var chmodModeRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+=][rwxXstugo0-7,+=-]*$`)
})

// permRule: chmod/chown/chgrp -R only on plain relative paths, and never
// on /, ~ or system paths.
func (c *checker) permRule(prog string, args []arg) string {
	recursive, endOpts, ref := false, false, false
	var ops []arg
	for _, a := range args[1:] {
		if a.split {
			return "unquoted expansion in " + prog + " arguments"
		}
		if !endOpts && a.lit && a.val == "--" {
			endOpts = true
			continue
		}
		if !endOpts && a.isFlag() {
			v := a.val
			switch {
			case strings.HasPrefix(v, "--"):
				if isLongPrefix(v, "--recursive", 5) {
					recursive = true
				}
				if strings.HasPrefix(v, "--reference") {
					ref = true
				}
				continue
			case prog == "chmod" && chmodModeRe().MatchString(v) && !strings.ContainsAny(v, "R"):
				// a mode such as -x or -w, not an option
			default:
				if strings.Contains(v, "R") {
					recursive = true
				}
				continue
			}
		}
		ops = append(ops, a)
	}
	targets := ops
	if !ref && len(ops) > 0 {
		targets = ops[1:] // the mode or owner
	}
	for _, t := range c.allTargets(targets) {
		k := classify(t)
		if recursive {
			if !t.lit || (k != pathPlain && k != pathTmp) {
				return fmt.Sprintf("%s -R on dangerous target %s (%s)", prog, q(t.val), pathKindText[k])
			}
			continue
		}
		switch k {
		case pathRoot, pathHome, pathSystem, pathUnknown:
			return fmt.Sprintf("%s on dangerous target %s (%s)", prog, q(t.val), pathKindText[k])
		}
	}
	return ""
}

// writeOperands checks tee and truncate, whose operands are all written.
func (c *checker) writeOperands(prog string, args []arg) string {
	// Short options that take a value, per program.
	withValue := map[string]string{"truncate": "sr", "touch": "rdt", "mkdir": "m", "mkfifo": "mZ", "mknod": "mZ", "rmdir": ""}[prog]
	n := 0
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a.isFlag() {
			v := a.val
			switch {
			case v == "--":
				for _, b := range args[i+1:] {
					if r := c.write(b, prog); r != "" {
						return r
					}
				}
				return ""
			case strings.HasPrefix(v, "--"):
				if !strings.Contains(v, "=") && (isLongOf(v, "size") || isLongOf(v, "reference") || isLongOf(v, "date") || isLongOf(v, "mode") || isLongOf(v, "context") && prog != "touch") {
					i++
				}
			case strings.IndexByte(withValue, v[len(v)-1]) >= 0:
				i++
			}
			continue
		}
		if n++; prog == "mknod" && n > 1 {
			break // mknod NAME TYPE MAJOR MINOR
		}
		if r := c.write(a, prog); r != "" {
			return r
		}
	}
	return ""
}

// cwdWriters create files in the working directory whose names the
// command line does not show (a patch's files, an archive's members, a
// clone, node_modules, a build's output).
var cwdWriters = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"patch": nil, "unzip": nil, "cpio": nil, "7z": set("x", "e"), "git": set("clone", "init"),
		"npm": set("install", "i", "ci", "add"), "pnpm": set("install", "i", "add"), "yarn": set("install", "add"),
		"go": set("build", "generate", "mod", "install"), "cargo": set("build", "new", "init"),
		"mktemp": nil,
	}
})

// cwdWrite blocks those programs when the working directory may be a
// system directory, and checks the directory or file they are told to
// write (-d, -o, --output).
func (c *checker) cwdWrite(prog string, args []arg) string {
	subs, ok := cwdWriters()[prog]
	if !ok {
		return ""
	}
	if subs != nil {
		sub := ""
		for _, a := range args[1:] {
			if !a.isFlag() {
				sub = a.val
				break
			}
		}
		if !subs[sub] {
			return ""
		}
	}
	dir := litArg(".")
	for i, a := range args[1:] {
		i++
		if !a.lit {
			continue
		}
		v := a.val
		switch {
		case v == "-d" && prog != "mktemp" || v == "-o" || v == "-p" && prog == "mktemp" || isLongOf(v, "directory") || isLongOf(v, "output") || isLongOf(v, "tmpdir"):
			val, has, _ := longOptIn(v, "directory", "output", "tmpdir")
			if d, _, ok := optValue(args, i, val, has); ok {
				if r := c.write(d, prog); r != "" {
					return r
				}
				dir = d
			}
		}
	}
	if prog == "mktemp" {
		// mktemp TEMPLATE creates the file it names.
		for _, a := range args[1:] {
			if !a.isFlag() {
				return c.write(a, prog)
			}
		}
		return ""
	}
	return c.write(inside(dir), prog)
}

// inside is a name in directory d: what a program writing into d creates.
func inside(d arg) arg {
	return arg{val: strings.TrimSuffix(d.val, "/") + "/*", pat: strings.TrimSuffix(d.pat, "/") + "/" + string(anySeg)}
}

// copyRule checks the destination of cp/ln/install/mv, what mv removes,
// and copies of network programs under another name.
func (c *checker) copyRule(prog string, args []arg) string {
	var ops []arg
	var dest *arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a.lit && a.val == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case a.isFlag():
			v := a.val
			switch {
			case v == "-t" || isLongOf(v, "target-directory"):
				if t, ok := takeLong(args, &i, "target-directory"); ok {
					dest = &t
				}
			case strings.HasPrefix(v, "-t") && len(v) > 2 && !strings.HasPrefix(v, "--"):
				t := litArg(v[2:])
				dest = &t
			case v == "-S" || !strings.Contains(v, "=") && isLongOf(v, "suffix") ||
				prog == "install" && (v == "-m" || v == "-o" || v == "-g" || !strings.Contains(v, "=") && (isLongOf(v, "mode") || isLongOf(v, "owner") || isLongOf(v, "group"))):
				i++
			}
		default:
			ops = append(ops, a)
		}
	}
	srcs := ops
	intoDir := dest != nil
	if dest == nil && len(ops) == 1 && ops[0].glob {
		// cp /usr/bin/{bash,x}: one word that expands to source and target.
		if k := c.programPath(ops[0]); k != "" {
			return "copy of program " + q(display(path.Base(ops[0].pat))) + " to a name the pattern chooses (" + prog + ")"
		}
	}
	if dest == nil {
		if len(ops) < 2 {
			return ""
		}
		dest, srcs = &ops[len(ops)-1], ops[:len(ops)-1]
	}
	if r := c.write(*dest, prog); r != "" {
		return r
	}
	for _, s := range srcs {
		if s.lit && strings.Contains(s.val, "/") && networkPrograms()[progName(s.val)] && !c.networkBounded() {
			return "copy of network-capable program " + q(progName(s.val))
		}
		if r := c.copyName(prog, []arg{s}, dest, intoDir || len(srcs) > 1); r != "" {
			return r
		}
		if prog == "mv" {
			for _, t := range c.targets(s) {
				switch k := classify(t); k {
				case pathRoot, pathHome, pathSystem, pathWildcard, pathUnknown:
					return fmt.Sprintf("mv of dangerous source %s (%s)", q(s.val), pathKindText[k])
				}
			}
		}
	}
	return ""
}

// protectedWrite blocks writes into system paths, block devices, .git and
// files that run code at login or hold credentials.
func protectedWrite(a arg, what string) string {
	p := a.pat
	if p == "" {
		return ""
	}
	if p[0] == '/' {
		c := path.Clean(p)
		switch {
		case writableDev()[c], strings.HasPrefix(c, "/dev/fd/"), strings.HasPrefix(c, "/dev/shm/"),
			strings.HasPrefix(c, "/proc/self/fd/"):
			return ""
		}
		if k := classify(a); k == pathSystem || k == pathRoot {
			return fmt.Sprintf("write to system path %s (%s)", q(a.val), what)
		}
	} else if p[0] != '~' && !isDyn(p[0]) {
		// ../../etc/passwd: climbing out of the tree into a system directory.
		c := path.Clean(p)
		ups := 0
		for strings.HasPrefix(c, "../") {
			c, ups = c[3:], ups+1
		}
		if ups > 0 {
			if k := classify(litArg("/" + c)); k == pathSystem {
				return fmt.Sprintf("write to system path %s (%s)", q(a.val), what)
			}
		}
	}
	for _, comp := range strings.Split(p, "/") {
		if sensitiveNames()[comp] || gitName(comp) {
			return fmt.Sprintf("write to protected file %s (%s)", q(a.val), what)
		}
		if isWild(comp) && hasLiteral(comp, "") {
			for name := range sensitiveNames() {
				if match(comp, name) || name == ".git" && match(strings.ToLower(comp), name) {
					return fmt.Sprintf("write to protected file %s (%s)", q(a.val), what)
				}
			}
		}
	}
	return ""
}

// gitName reports a path component that names the .git directory on some
// filesystem git runs on: any case, and Windows' trailing dots and spaces.
func gitName(comp string) bool {
	return strings.EqualFold(strings.TrimRight(comp, ". "), ".git")
}

// psRule blocks the BSD "e" option (ps e, ps auxe, ps eww), which prints
// every process's environment.
func psRule(args []arg) string {
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit || a.val == "" {
			continue
		}
		v := a.val
		if v[0] == '-' {
			if strings.HasPrefix(v, "--") {
				if !strings.Contains(v, "=") && (v == "--format" || v == "--sort" || v == "--pid" || v == "--ppid" || v == "--user" || v == "--group" || v == "--cols" || v == "--columns" || v == "--rows" || v == "--lines" || v == "--tty") {
					i++
				}
				continue
			}
			if strings.IndexByte("oOpPuUgGtCqkN", v[len(v)-1]) >= 0 && len(v) == 2 {
				i++
			}
			continue
		}
		if isLetters(v) && strings.Contains(v, "e") {
			return "environment dump (ps " + clip(v, 10) + ")"
		}
	}
	return ""
}

// killRule blocks kill -1 (every process the user may signal) and kill 1
// (PID 1, the container's init).
func killRule(args []arg) string {
	i := 1
	if i < len(args) && args[i].lit {
		switch v := args[i].val; {
		case v == "-l" || v == "-L" || strings.HasPrefix(v, "--list") || strings.HasPrefix(v, "--table"):
			return ""
		case v == "-s" || v == "-n" || v == "--signal":
			i += 2
		case v == "--":
			i++
		case strings.HasPrefix(v, "-"):
			i++
			if i < len(args) && args[i].lit && args[i].val == "--" {
				i++
			}
		}
	}
	for _, a := range args[min(i, len(args)):] {
		if a.split {
			return "unquoted expansion in kill arguments"
		}
		if a.lit && (a.val == "-1" || a.val == "1") {
			return "kill of every process (kill " + a.val + ")"
		}
	}
	return ""
}

// tarRule blocks the tar options that run commands and extraction into
// system directories.
func (c *checker) tarRule(args []arg) string {
	extract := false
	var dirs []arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			continue
		}
		v := a.val
		switch {
		case isLongOf(v, "to-command") || isLongOf(v, "use-compress-program"):
			code, _ := takeLong(args, &i, "to-command", "use-compress-program")
			if r := c.codeArg("tar "+clip(v, 24), code); r != "" {
				return r
			}
		case isLongOf(v, "checkpoint-action"):
			act, _ := takeLong(args, &i, "checkpoint-action")
			if !act.lit {
				return "non-literal tar --checkpoint-action"
			}
			if strings.Contains(act.val, "exec") {
				return "tar option runs a command (--checkpoint-action=exec)"
			}
		case isLongOf(v, "rsh-command") || isLongOf(v, "rmt-command") || isLongOf(v, "info-script") || isLongOf(v, "new-volume-script"):
			return "tar option runs a command (" + clip(v, 24) + ")"
		case isLongOf(v, "extract") || isLongOf(v, "get"):
			extract = true
		case isLongOf(v, "directory"):
			if d, ok := takeLong(args, &i, "directory"); ok {
				dirs = append(dirs, d)
			}
		case strings.HasPrefix(v, "--"):
		case strings.HasPrefix(v, "-") || i == 1:
			oldStyle := !strings.HasPrefix(v, "-")
			cluster := strings.TrimPrefix(v, "-")
			next := i + 1
			for j := 0; j < len(cluster); j++ {
				ch := cluster[j]
				if ch == 'x' {
					extract = true
				}
				if strings.IndexByte("fCITXbgKLNVHF", ch) < 0 {
					continue
				}
				var val arg
				switch {
				case !oldStyle && j < len(cluster)-1:
					val = litArg(cluster[j+1:])
					j = len(cluster)
				case next < len(args):
					val = args[next]
					next++
				}
				switch ch {
				case 'I':
					if !val.lit {
						return "non-literal tar compress program"
					}
					if r := c.nested(val.val); r != "" {
						return r
					}
				case 'F':
					return "tar option runs a command (-F)"
				case 'C':
					dirs = append(dirs, val)
				}
			}
			i = next - 1
		}
	}
	if extract {
		if len(dirs) == 0 {
			dirs = append(dirs, litArg("."))
		}
		for _, d0 := range dirs {
			for _, d := range c.targets(inside(d0)) {
				switch k := classify(d); k {
				case pathRoot, pathSystem, pathHome, pathUnknown:
					return fmt.Sprintf("tar extraction into %s (%s)", q(d.val), pathKindText[k])
				}
			}
		}
	}
	return ""
}
