package shellgate

import (
	"path"
	"strings"
	"sync"
)

// A sensitive path can be spelled in many ways: /proc/*/environ,
// /pro[c]/self/env*, /proc/{self,1}/environ, "/proc/$$/environ",
// /dev/fd/../environ, or a relative environ after cd /proc/self. Rather
// than list spellings, the gate reduces every word to a pattern (words.go)
// and asks whether that pattern and a sensitive one can match a common
// string. Both sides may hold wildcards, so this is an intersection of two
// patterns, computed on their product automaton.

// sensitive is a pattern of files whose mere reading leaks secrets.
type sensitive struct {
	q     string              // anyStr + pattern + anyStr: "contains"
	tail  string              // the pattern's last literal run: a plain word must contain it
	stars uint64              // positions of q that may match nothing
	ev    uint64              // positions of q that are literal characters of the pattern
	adv   [258]uint64         // positions of q that advance on each character class
	stay  [258]uint64         // positions of q that loop on each character class
	what  string              // the reason given
	alter func(string) string // normalization applied to the word first
}

const (
	clsAny  = 256 // the word's wildcard may produce any character, '/' included
	clsNoSl = 257 // any character but '/'
)

func newSensitive(pat, what string, alter func(string) string) *sensitive {
	q := string(anyStr) + pat + string(anyStr)
	if len(q) > 63 {
		panic("sensitive pattern too long: " + pat)
	}
	s := &sensitive{q: q, what: what, alter: alter}
	s.tail = pat[strings.LastIndexAny(pat, "\x00\x01\x02\x03\x04")+1:]
	for j := 0; j < len(q); j++ {
		bit := uint64(1) << j
		if isStarByte(q[j]) {
			s.stars |= bit
		}
		switch ch := q[j]; ch {
		case anyStr, anyRun:
			for c := 0; c < 256; c++ {
				s.stay[c] |= bit
			}
		case anySeg, anyTok:
			for c := 0; c < 256; c++ {
				if c != '/' {
					s.stay[c] |= bit
				}
			}
		case anyChar:
			for c := 0; c < 256; c++ {
				if c != '/' {
					s.adv[c] |= bit
				}
			}
		default:
			s.adv[ch] |= bit
			if ch != '/' && ch != '.' {
				// Slashes and dots are in every path: they prove nothing.
				s.ev |= bit
			}
		}
	}
	for c := 0; c < 256; c++ {
		s.adv[clsAny] |= s.adv[c]
		s.stay[clsAny] |= s.stay[c]
		if c != '/' {
			s.adv[clsNoSl] |= s.adv[c]
			s.stay[clsNoSl] |= s.stay[c]
		}
	}
	return s
}

// classMasks are the positions that advance and loop when the word
// produces a character of class cls (a byte, clsAny or clsNoSl).
func (s *sensitive) classMasks(cls int) (adv, stay uint64) {
	return s.adv[cls], s.stay[cls]
}

// closure adds the states reachable by letting q's wildcards match nothing.
func (s *sensitive) closure(set uint64) uint64 {
	for {
		next := set | (set&s.stars)<<1
		if next == set {
			return set
		}
		set = next
	}
}

func isStarByte(c byte) bool { return c == anyStr || c == anyRun || c == anySeg || c == anyTok }

// found reports whether some string matched by the word pattern p contains
// a string of the sensitive pattern, with at least one literal character of
// the word matched against a literal character of the sensitive pattern.
// That last condition keeps a bare "$x" (which could be anything) from
// counting: it needs the word itself to point at the sensitive place.
func (s *sensitive) found(p string) bool {
	if !isWild(p) && !strings.Contains(p, s.tail) {
		return false
	}
	accept := uint64(1) << len(s.q)
	plain, ev := s.closure(1), uint64(0) // states without, and with, evidence
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch ch {
		case anyStr, anyRun, anySeg, anyTok:
			cls := clsAny
			if ch == anySeg || ch == anyTok {
				cls = clsNoSl
			}
			adv, stay := s.classMasks(cls)
			for {
				np := s.closure(plain | (plain&adv)<<1 | plain&stay)
				ne := s.closure(ev | (ev&adv)<<1 | ev&stay)
				if np == plain && ne == ev {
					break
				}
				plain, ev = np, ne
			}
		case anyChar:
			adv, stay := s.classMasks(clsNoSl)
			plain, ev = s.closure((plain&adv)<<1|plain&stay), s.closure((ev&adv)<<1|ev&stay)
		default:
			adv, stay := s.classMasks(int(ch))
			gain := plain & adv & s.ev
			plain, ev = s.closure((plain&adv&^s.ev)<<1|plain&stay), s.closure((ev&adv)<<1|ev&stay|gain<<1)
		}
		if plain|ev == 0 {
			return false
		}
	}
	return ev&accept != 0
}

// procAliases rewrites the names that lead into /proc/self by a symlink,
// so that /dev/fd/../environ is seen for what it is.
func procAliases(p string) string {
	if !strings.Contains(p, "/dev/") {
		return p
	}
	return aliasReplacer().Replace(p)
}

var (
	aliasReplacer = sync.OnceValue(func() *strings.Replacer {
		return strings.NewReplacer("/dev/fd/", "/proc/self/fd/", "/dev/fd"+string(anyStr), "/proc/self/fd"+string(anyStr),
			"/dev/stdin", "/proc/self/fd/0", "/dev/stdout", "/proc/self/fd/1", "/dev/stderr", "/proc/self/fd/2")
	})
	selfReplacer = sync.OnceValue(func() *strings.Replacer {
		return strings.NewReplacer("/proc/self/", "/self/", "/proc/thread-self/", "/self/")
	})
)

// otherProcs hides this process's own entries (/proc/self/fd/0 is only
// standard input), so that what remains names another process.
func otherProcs(p string) string {
	p = procAliases(p)
	if !strings.Contains(p, "self/") {
		return p
	}
	return selfReplacer().Replace(p)
}

var sensitiveReads = sync.OnceValue(func() []*sensitive {
	return []*sensitive{
		newSensitive("/proc/"+string(anySeg)+"/environ", "read of /proc/*/environ", procAliases),
		newSensitive("/proc/"+string(anySeg)+"/task/"+string(anySeg)+"/environ", "read of /proc/*/environ", procAliases),
		newSensitive("/proc/"+string(anySeg)+"/mem", "read of /proc/*/mem", procAliases),
		newSensitive("/proc/"+string(anySeg)+"/task/"+string(anySeg)+"/mem", "read of /proc/*/mem", procAliases),
		newSensitive("/proc/"+string(anySeg)+"/fd", "another process's open files (/proc/*/fd)", otherProcs),
		newSensitive("/proc/"+string(anySeg)+"/map_files/", "another process's mapped files (/proc/*/map_files)", otherProcs),
		// /proc/self/fd/3/.. is wherever descriptor 3 points: cleaning the
		// path lexically would be wrong, so the climb itself is refused.
		newSensitive("/proc/"+string(anySeg)+"/fd/"+string(anySeg)+"/..", "a path that climbs out of a /proc link", procAliases),
		newSensitive("/proc/"+string(anySeg)+"/cwd/..", "a path that climbs out of a /proc link", procAliases),
		newSensitive("/dev/mem", "raw memory device", nil),
		newSensitive("/dev/kmem", "raw memory device", nil),
		newSensitive("/dev/port", "raw I/O port device", nil),
		newSensitive("/run/secrets/", "mounted secrets (/run/secrets)", nil),
	}
})

// sensitiveRead returns why reading (or naming) a path matching p leaks
// secrets, or "".
func sensitiveRead(p string) string {
	if !strings.ContainsAny(p, "/\x00\x03") {
		return "" // no way to reach an absolute path
	}
	for _, s := range sensitiveReads() {
		q := p
		if s.alter != nil {
			q = s.alter(q)
		}
		vs, n := pathVariants(q)
		if strings.HasSuffix(s.what, "link") {
			n = 1 // the climb is only visible before cleaning
		}
		for _, v := range vs[:n] {
			if s.found(v) {
				return s.what
			}
		}
	}
	return ""
}

// pathVariants are the spellings a check should see: the word with
// repeated slashes and /./ removed, and its lexical cleaning (which takes
// x/.. away).
func pathVariants(p string) (vs [2]string, n int) {
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return [2]string{p}, 1
	}
	flat := p
	for strings.Contains(flat, "//") {
		flat = strings.ReplaceAll(flat, "//", "/")
	}
	for strings.Contains(flat, "/./") {
		flat = strings.ReplaceAll(flat, "/./", "/")
	}
	return [2]string{flat, path.Clean(flat)}, 2
}

// unknownDir is a working directory the gate cannot know.
const unknownDir = string(anyRun)

// inCwd returns the patterns a path word may name given the working
// directories the script may be in (relative to where it started).
func (c *checker) inCwd(p string) []string {
	if len(c.cwd) == 0 || len(c.cwd) == 1 && c.cwd[0] == "." || p == "" || p[0] == '/' || p[0] == '~' {
		return []string{p}
	}
	out := make([]string, 0, len(c.cwd)+1)
	if isDyn(p[0]) {
		out = append(out, p) // "$x/y" may well be absolute
	}
	for _, d := range c.cwd {
		out = append(out, joinDir(d, p))
	}
	return out
}

// joinDir resolves relative path p in directory pattern d.
func joinDir(d, p string) string {
	switch {
	case d == ".":
		return p
	case p == "" || p[0] == '/' || p[0] == '~':
		return p
	case d == "" || isDyn(d[0]) && d[0] != anyStr:
		return unknownDir + "/" + p
	case d[0] == '/':
		if (strings.HasPrefix(d, "/dev") || strings.HasPrefix(d, "/proc")) && (p == ".." || strings.HasPrefix(p, "../")) {
			// .. from inside /dev/fd or /proc/self/fd follows a symlink.
			return unknownDir + "/" + p
		}
		return path.Clean(d + "/" + p)
	case d[0] == '~':
		rest := strings.TrimPrefix(strings.TrimPrefix(d, "~"), "/")
		c := path.Join(rest, p)
		if c == ".." || strings.HasPrefix(c, "../") {
			// Above the home directory: somewhere near the root.
			return path.Clean("/" + c)
		}
		return "~/" + c
	}
	return path.Clean(d + "/" + p)
}

// maxCwds bounds the working directories tracked at once.
const maxCwds = 4

// unionDirs is a set of working directories.
func unionDirs(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, d := range b {
		seen := false
		for _, o := range out {
			seen = seen || o == d
		}
		if !seen {
			out = append(out, d)
		}
	}
	if len(out) > maxCwds {
		return []string{unknownDir}
	}
	return out
}
