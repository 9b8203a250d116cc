package shellgate

import (
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// shell handles bash/sh/zsh/…: -c code is parsed and gated recursively, a
// script file is allowed (see the package doc), and a shell reading its
// program from stdin is allowed only when stdin is a literal here-document
// or here-string whose text passes the gate.
func (c *checker) shell(prog string, cl callCtx) string {
	args := cl.args
	cmd, stdin, info := false, false, false
	i := 1
	for ; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			break
		}
		v := a.val
		if v == "--" || v == "-" {
			i++
			if v == "-" {
				stdin = true
			}
			break
		}
		if strings.HasPrefix(v, "--") {
			switch v {
			case "--rcfile", "--init-file":
				i++
			case "--version", "--help":
				info = true
			}
			continue
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			break
		}
		for _, ch := range v[1:] {
			switch ch {
			case 'c':
				cmd = true
			case 's', 'i':
				stdin = true
			case 'o', 'O':
				i++ // -o option-name
			}
		}
	}
	ops := args[min(i, len(args)):]
	if cmd {
		if len(ops) == 0 {
			if cl.dynTail {
				return "non-literal code passed to " + prog + " -c"
			}
			return ""
		}
		if !ops[0].lit {
			return "non-literal code passed to " + prog + " -c"
		}
		// bash -c CODE NAME ARGS…: ARGS are the code's positional parameters.
		child := c.child()
		child.pos = &varInfo{}
		for _, a := range ops[min(2, len(ops)):] {
			child.pos.add(argValue(a))
		}
		return child.script(ops[0].val)
	}
	if len(ops) == 0 || stdin {
		if info && !stdin {
			return ""
		}
		return c.stdinProgram(prog, cl, true)
	}
	return scriptOperand(prog, ops[0])
}

// scriptOperand checks the script file given to an interpreter. Script
// files are allowed, but not ones that are really stdin or a process
// substitution, since their content is chosen by the same command line.
func scriptOperand(prog string, s arg) string {
	switch {
	case s.procSubst:
		return "process substitution run as a script (" + clip(prog, maxNameLen) + " <(…))"
	case s.lit && stdinPath(s.val):
		return "interpreter " + q(prog) + " reading code from stdin"
	}
	return ""
}

// stdinProgram decides on an interpreter whose program arrives on stdin.
func (c *checker) stdinProgram(prog string, cl callCtx, isShell bool) string {
	if cl.dynTail {
		return "run-time arguments (xargs) to " + q(prog) + " could be inline code"
	}
	in := stdinRedirect(cl.redirs)
	if in != nil {
		if body, ok := hereText(in); ok {
			if !isShell {
				return "inline code for " + q(prog) + " via here-document"
			}
			return c.nested(body)
		}
		if in.Op == syntax.Hdoc || in.Op == syntax.DashHdoc || in.Op == syntax.WordHdoc {
			return "non-literal here-document fed to " + q(prog)
		}
		if in.Op == syntax.RdrIn {
			// bash < build.sh is bash build.sh: a script file.
			f := c.resolve(in.Word)
			if f.procSubst || f.run() || f.lit && stdinPath(f.val) {
				return "interpreter " + q(prog) + " reading code from stdin"
			}
			if f.pat != "" {
				return ""
			}
		}
	}

	if cl.piped && in == nil {
		if isShell {
			return "pipe into shell " + q(prog)
		}
		return "pipe into interpreter " + q(prog)
	}
	if isShell {
		return "shell " + q(prog) + " reading its program from stdin"
	}
	return "interpreter " + q(prog) + " reading code from stdin"
}

// stdinRedirect is the redirection that gives a command its standard
// input: the last one of fd 0 among redirs, or nil.
func stdinRedirect(redirs []*syntax.Redirect) (in *syntax.Redirect) {
	for _, r := range redirs {
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			if r.N == nil || r.N.Value == "0" {
				in = r
			}
		}
	}
	return in
}

// hereText returns the text a here-document or here-string feeds to stdin,
// when it is fully literal.
func hereText(r *syntax.Redirect) (string, bool) {
	switch r.Op {
	case syntax.WordHdoc:
		a := resolve(r.Word)
		return a.val + "\n", a.lit
	case syntax.Hdoc, syntax.DashHdoc:
		if r.Hdoc == nil {
			return "", true
		}
		quoted := false
		for _, p := range r.Word.Parts {
			l, ok := p.(*syntax.Lit)
			quoted = quoted || !ok || strings.Contains(l.Value, "\\")
		}
		var b strings.Builder
		for _, p := range r.Hdoc.Parts {
			l, ok := p.(*syntax.Lit)
			if !ok {
				return "", false
			}
			b.WriteString(l.Value)
		}
		if quoted {
			return b.String(), true
		}
		return unescapeHeredoc(b.String()), true
	}
	return "", false
}

// interpreter handles python, perl, ruby, node, php and lua. Script files
// are allowed; inline code, servers and stdin programs are blocked.
func (c *checker) interpreter(lang, prog string, cl callCtx) string {
	args := cl.args
	// Per language: flags whose presence means inline code, flags taking
	// the rest of the cluster or the next word, flags taking only the rest
	// of the cluster, and flags taking only following digits.
	var code, restOrNext, restOnly, digits string
	switch lang {
	case "python", "pypy":
		code, restOrNext = "c", "mWXQ"
	case "perl":
		code, restOrNext, restOnly, digits = "eE", "I", "iFdDxMmC", "l0"
	case "ruby":
		code, restOrNext, restOnly, digits = "e", "CEIr", "xFKTW", "0"
	case "node":
		code, restOrNext = "ep", "r"
	case "php":
		code, restOrNext = "rRBEaS", "cdzt"
	case "lua", "luajit":
		code, restOrNext = "ei", "l"
	}
	info := false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			return scriptOperand(prog, a)
		}
		v := a.val
		if v == "--" {
			if i+1 < len(args) {
				return scriptOperand(prog, args[i+1])
			}
			break
		}
		if v == "" || v == "-" || v[0] != '-' {
			return scriptOperand(prog, a)
		}
		if strings.HasPrefix(v, "--") {
			name, _, _ := strings.Cut(v, "=")
			if _, _, ok := longOptIn(v, "eval", "print"); ok {
				return "inline " + lang + " code (" + clip(prog, maxNameLen) + " " + clip(name, 20) + ")"
			}
			if val, has, ok := longOptIn(v, "require", "import", "loader", "experimental-loader"); ok && lang == "node" {
				mod, _ := takeValue(args, &i, val, has)
				if r := nodeModule(prog, mod); r != "" {
					return r
				}
				continue
			}
			switch {
			case name == "--version" || name == "--help":
				info = true
			case lang == "node" && (name == "--test" || name == "--run" || name == "--v8-options" || name == "--completion-bash"):
				info = true // runs the project's tests or scripts, not stdin
			case !strings.Contains(v, "=") && name == "--check-hash-based-pycs":
				i++
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j]
			switch {
			case strings.IndexByte(code, ch) >= 0:
				return "inline " + lang + " code (" + clip(prog, maxNameLen) + " -" + string(ch) + ")"
			case ch == 'm' && (lang == "python" || lang == "pypy"):
				mod := v[j+1:]
				if mod == "" && i+1 < len(args) {
					mod = args[i+1].val
					if !args[i+1].lit {
						return "non-literal module for " + q(prog)
					}
				}
				if pythonModules()[strings.ToLower(mod)] {
					return "python module " + q(mod) + " runs a server or inline code"
				}
				if pythonRunners()[mod] {
					// python -m cProfile -m http.server: the rest is python's
					// own command line again.
					rest := i + 1
					if v[j+1:] == "" {
						rest++
					}
					return c.interpreter(lang, prog, cl.with(append([]arg{args[0]}, args[min(rest, len(args)):]...)))
				}
				return ""
			case ch == 'r' && lang == "node":
				mod, ok := takeValue(args, &i, v[j+1:], j+1 < len(v))
				if !ok {
					return ""
				}
				if r := nodeModule(prog, mod); r != "" {
					return r
				}
				j = len(v)
			case (ch == 'M' || ch == 'm' || ch == 'd') && lang == "perl":
				mod := v[j+1:]
				if ch == 'd' {
					_, mod, _ = strings.Cut(mod, ":")
				}
				if r := perlModule(prog, mod); r != "" {
					return r
				}
				j = len(v)
			case ch == 'f' && lang == "php":
				return "" // -f script file
			case strings.IndexByte(restOrNext, ch) >= 0:
				if j == len(v)-1 {
					i++
				}
				j = len(v)
			case strings.IndexByte(restOnly, ch) >= 0:
				if ch == 'C' {
					for j+1 < len(v) && strings.IndexByte("0123456789IOESDLAaio", v[j+1]) >= 0 {
						j++
					}
					continue
				}
				j = len(v)
			case strings.IndexByte(digits, ch) >= 0:
				// -l and -0 take octal digits, -0x hexadecimal ones.
				isDigit := func(b byte) bool { return b >= '0' && b <= '7' }
				if ch == '0' && j+1 < len(v) && (v[j+1] == 'x' || v[j+1] == 'X') {
					j++
					isDigit = isHex
				}
				for j+1 < len(v) && isDigit(v[j+1]) {
					j++
				}
			case ch == 'V' || ch == 'v' || ch == 'h':
				info = true
			}
		}
	}
	if info {
		return ""
	}
	return c.stdinProgram(prog, cl, false)
}

// otherInterpreter handles the interpreters with a simple table entry.
func (c *checker) otherInterpreter(prog string, spec interpSpec, cl callCtx) string {
	args := cl.args
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !a.lit {
			return scriptOperand(prog, a)
		}
		v := a.val
		if v == "" || v == "--" || v == "-" || v[0] != '-' {
			if v == "--" && i+1 < len(args) {
				return scriptOperand(prog, args[i+1])
			}
			return scriptOperand(prog, a)
		}
		name, _, _ := strings.Cut(strings.ToLower(v), "=")
		for _, f := range spec.codeFlags {
			// Short code flags also hide in clusters such as -ve.
			if name == f || (len(f) == 2 && len(name) <= 4 && isLetters(name[1:]) && strings.Contains(name[1:], f[1:])) {
				return "inline " + spec.lang + " code (" + prog + " " + clip(v, 20) + ")"
			}
		}
		if name == "--version" || name == "--help" || name == "-version" || name == "-help" || name == "-h" {
			return ""
		}
	}
	if !spec.stdin {
		return ""
	}
	return c.stdinProgram(prog, cl, false)
}

// awk is allowed unless its program can run commands, talk to the network
// or read the environment.
func (c *checker) awkRule(args []arg) string {
	program := -1
	hasFile, inPlace := false, false
	var files []arg
	for i := 1; i < len(args); i++ {
		a := args[i]
		if r := programFile("awk", args, i, "-f", "--file", "--exec", "--include"); r != "" {
			return r
		}
		if !a.lit {
			if program < 0 && !hasFile {
				return "non-literal awk program"
			}
			continue
		}
		v := a.val
		switch {
		case v == "--":
			if !hasFile && i+1 < len(args) {
				program = i + 1
			}
			i = len(args)
		case v == "-l" || strings.HasPrefix(v, "-l") && !strings.HasPrefix(v, "--") || isLongOf(v, "load"):
			return "awk extension load (" + clip(v, 10) + ")"
		case v == "-i" && i+1 < len(args) && args[i+1].val == "inplace" || isLongOf(v, "include") && strings.HasSuffix(v, "=inplace"):
			inPlace = true
			if !strings.Contains(v, "=") {
				i++
			}
		case v == "-e" || isLongOf(v, "source"):
			if p, ok := takeLong(args, &i, "source"); ok {
				if !p.lit {
					return "non-literal awk program"
				}
				if r := c.awkRisk(p.val); r != "" {
					return r
				}
			}
			hasFile = true
		case v == "-f" || v == "-E" || v == "-i" || isLongOf(v, "file") || isLongOf(v, "exec") || isLongOf(v, "include"):
			hasFile = true
			if !strings.Contains(v, "=") {
				i++
			}
		case v == "-v" || v == "-F" || !strings.Contains(v, "=") && (isLongOf(v, "assign") || isLongOf(v, "field-separator")):
			i++
		case strings.HasPrefix(v, "-") && len(v) > 1:
			if strings.HasPrefix(v, "-f") && !strings.HasPrefix(v, "--") {
				hasFile = true
			}
		default:
			if program < 0 && !hasFile {
				program = i
				continue
			}
			files = append(files, a)
		}
	}
	if inPlace {
		for _, f := range files {
			if r := c.write(f, "awk -i inplace"); r != "" {
				return r
			}
		}
	}
	if program >= 0 && program < len(args) {
		if !args[program].lit {
			return "non-literal awk program"
		}
		return c.awkRisk(args[program].val)
	}
	return ""
}

var (
	awkStringRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`"(\\.|[^"\\])*"`)
	})
	awkSystemRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\bsystem\s*\(`)
	})
	awkGetRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\|\s*&?\s*getline|\|&`)
	})
	awkPrintRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\bprintf?\b[^;{}\n]*[^|]\|[^|]`)
	})
	// getline from a file whose name is not a single string literal.
	awkReadRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\bgetline\b\s*[A-Za-z_$][A-Za-z0-9_\[\]$]*?\s*<\s*[^"\s]|\bgetline\s*<\s*[^"\s]|\bgetline\b[^;{}\n]*<\s*""\s*[^\s;})]`)
	})
	// The target of print > and print >>, literal strings kept.
	awkRedirRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\bprintf?\b(?:[^;{}\n">]|"(?:\\.|[^"\\])*")*>>?\s*("(?:\\.|[^"\\])*"|[^;{}\n]*)`)
	})
)

func (c *checker) awkRisk(prog string) string {
	switch {
	case strings.Contains(prog, "/inet"):
		return "awk network access (/inet)"
	case strings.Contains(prog, "@load"):
		return "awk extension load (@load)"
	case strings.Contains(prog, "ENVIRON"):
		return "environment dump (awk ENVIRON)"
	}
	code := awkStringRe().ReplaceAllString(prog, `""`)
	switch {
	case awkSystemRe().MatchString(code):
		return "awk system() runs commands"
	case awkGetRe().MatchString(code):
		return "awk reads from a command (| getline)"
	case awkPrintRe().MatchString(code + " "):
		return "awk prints into a command (print | cmd)"
	case awkReadRe().MatchString(code):
		return "awk reads a file chosen at run time (getline < expression)"
	}
	for _, m := range awkRedirRe().FindAllStringSubmatch(prog, -1) {
		target := strings.TrimSpace(m[1])
		if strings.HasPrefix(target, "\"") && strings.HasSuffix(target, "\"") && len(target) >= 2 {
			if r := c.write(litArg(target[1:len(target)-1]), "awk print >"); r != "" {
				return r
			}
			continue
		}
		if target != "" {
			return "awk writes to a file chosen at run time (print > expression)"
		}
	}
	return ""
}

// sedRule blocks GNU sed's e command and s///e flag, which run shell
// commands, and in-place edits of protected files.
func (c *checker) sedRule(args []arg) string {
	var scripts, files []arg
	haveScript, inPlace := false, false
	for i := 1; i < len(args); i++ {
		a := args[i]
		if r := programFile("sed", args, i, "-f", "--file"); r != "" {
			return r
		}
		if !a.isFlag() {
			if !haveScript {
				scripts = append(scripts, a)
				haveScript = true
			} else {
				files = append(files, a)
			}
			continue
		}
		v := a.val
		switch {
		case v == "--":
			for _, b := range args[i+1:] {
				if !haveScript {
					scripts, haveScript = append(scripts, b), true
				} else {
					files = append(files, b)
				}
			}
			i = len(args)
		case isLongOf(v, "expression"):
			if e, ok := takeLong(args, &i, "expression"); ok {
				scripts = append(scripts, e)
			}
			haveScript = true
		case isLongOf(v, "file"):
			haveScript = true
			if !strings.Contains(v, "=") {
				i++
			}
		case isLongOf(v, "line-length"):
			if !strings.Contains(v, "=") {
				i++
			}
		case isLongOf(v, "in-place"):
			inPlace = true
		case strings.HasPrefix(v, "--"):
		default:
			for j := 1; j < len(v); j++ {
				ch := v[j]
				if ch == 'i' {
					inPlace = true
					break
				}
				if ch == 'e' || ch == 'f' || ch == 'l' {
					rest := v[j+1:]
					if rest == "" && i+1 < len(args) {
						i++
						if ch == 'e' {
							scripts = append(scripts, args[i])
						}
					} else if ch == 'e' {
						scripts = append(scripts, litArg(rest))
					}
					if ch != 'l' {
						haveScript = true
					}
					break
				}
			}
		}
	}
	for _, s := range scripts {
		text := s.val
		if !s.lit {
			// Run-time text inside a spelled-out script (s/X/$(date +%F)/)
			// is data like a script file's content, which the gate never
			// reads either; a command chosen at run time is not.
			if s.pat == "" || s.pat[0] <= anyTok {
				return "non-literal sed script"
			}
			text = display(s.pat)
		}
		if r := sedRisk(text); r != "" {
			return r
		}
	}
	if inPlace {
		for _, f := range files {
			if r := c.write(f, "sed -i"); r != "" {
				return r
			}
		}
	}
	return ""
}

// sedRisk scans a sed script command by command.
func sedRisk(s string) string {
	n := len(s)
	i := 0
	skipSpace := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	// delimited skips a regex or replacement ending at delim.
	delimited := func(delim byte) bool {
		for i < n {
			switch s[i] {
			case '\\':
				i += 2
				continue
			case delim:
				i++
				return true
			case '\n':
				if delim != '\n' {
					return false
				}
			}
			i++
		}
		return false
	}
	toEOL := func() string {
		start := i
		for i < n && s[i] != '\n' {
			if s[i] == '\\' && i+1 < n {
				i++
			}
			i++
		}
		return s[start:i]
	}
	toSemi := func() {
		for i < n && s[i] != '\n' && s[i] != ';' && s[i] != '}' {
			i++
		}
	}
	// wfile judges the file a w command or flag writes.
	wfile := func() string {
		skipSpace()
		return protectedWrite(litArg(strings.TrimSpace(toEOL())), "sed w")
	}
	address := func() bool {
		var d byte
		switch {
		case i < n && s[i] == '/':
			d, i = '/', i+1
		case i+1 < n && s[i] == '\\':
			d, i = s[i+1], i+2
		default:
			for i < n && (s[i] >= '0' && s[i] <= '9' || s[i] == '$' || s[i] == '~' || s[i] == '+') {
				i++
			}
			return true
		}
		if !delimited(d) {
			return false
		}
		for i < n && (s[i] == 'I' || s[i] == 'M') {
			i++
		}
		return true
	}
	for i < n {
		for i < n && strings.IndexByte(" \t\n;", s[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		if !address() {
			return "unparsable sed script"
		}
		skipSpace()
		if i < n && s[i] == ',' {
			i++
			skipSpace()
			if !address() {
				return "unparsable sed script"
			}
		}
		skipSpace()
		for i < n && s[i] == '!' {
			i++
			skipSpace()
		}
		if i >= n {
			return "unparsable sed script"
		}
		cmd := s[i]
		i++
		switch cmd {
		case '{', '}', '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case '#', 'a', 'i', 'c', 'r', 'R':
			toEOL()
		case ':', 'b', 't', 'T', 'v':
			toSemi()
		case 'l', 'L', 'q', 'Q':
			skipSpace()
			for i < n && s[i] >= '0' && s[i] <= '9' {
				i++
			}
		case 'w', 'W':
			if r := wfile(); r != "" {
				return r
			}
		case 'e':
			return "sed e command runs shell commands"
		case 's', 'y':
			if i >= n || s[i] == '\n' || s[i] == '\\' {
				return "unparsable sed script"
			}
			d := s[i]
			i++
			// s/pattern/replacement/ and y/source/dest/: two delimited parts.
			if pattern, replacement := delimited(d), delimited(d); !pattern || !replacement {
				return "unparsable sed script"
			}
			for cmd == 's' && i < n && strings.IndexByte(";\n}# \t", s[i]) < 0 {
				switch f := s[i]; {
				case f == 'e':
					return "sed s///e flag runs shell commands"
				case f == 'w':
					i++
					if r := wfile(); r != "" {
						return r
					}
				case strings.IndexByte("gpiImM0123456789", f) >= 0:
					i++
				default:
					return "unparsable sed script"
				}
			}
		default:
			return "unparsable sed script"
		}
	}
	return ""
}

// editorRule blocks vim command-line commands (-c, +cmd, --cmd, -S, -s)
// and ex mode, which can all run :!shell commands.
func editorRule(prog string, cl callCtx) string {
	for _, a := range cl.args[1:] {
		if !a.lit {
			continue
		}
		v := a.val
		switch {
		case v == "-c" || v == "--cmd" || v == "-S" || v == "-s" || v == "-e" || v == "-E" || v == "-es" || v == "-Es":
			return "editor command-line commands (" + prog + " " + v + ")"
		case len(v) > 1 && v[0] == '+' && !isDigits(v[1:]):
			return "editor command-line commands (" + prog + " +cmd)"
		}
	}
	if prog == "ex" || prog == "nex" {
		return edRule(cl)
	}
	return ""
}

// edRule: ed and ex read commands, including !shell escapes, from stdin.
func edRule(cl callCtx) string {
	for _, r := range cl.redirs {
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
			if body, ok := hereText(r); !ok || strings.Contains(body, "!") {
				return "ed script may run shell commands (!)"
			}
			return ""
		}
	}
	if cl.piped {
		return "pipe into ed, which can run shell commands"
	}
	return ""
}
