package redact

import (
	"math"
	"strings"
)

const (
	minHex    = 32 // hex digits in a secret
	gitSHALen = 40 // lowercase hex digits in a git object name, kept
	minB64    = 40 // base64 characters in a secret
)

// The base64 heuristic scores a run by how far three statistics lie from
// their means for random base64 of minB64 characters, in standard
// deviations (measured by simulation): Shannon entropy in bits per
// character (mean 4.78, sd 0.14), the rate of switches between character
// classes upper, lower, digit and symbol (0.64, 0.076), and the fraction of
// characters inside word-like runs such as "Name", "name" or "NAME" (0.225,
// 0.10), which counts against. Identifiers and prose sit far below random
// data on the first two and far above on the third. A run scoring under
// b64MinScore is not a secret. On random base64 this misses about 0.6% of
// 40-character strings, 0.2% at 44 and none at 64; on the Go source tree's
// identifiers and comments and on a Linux system's file paths it flags
// almost nothing but real base64. See TestBase64Heuristic.
const (
	b64EntropyMean, b64EntropySD       = 4.78, 0.14
	b64TransitionMean, b64TransitionSD = 0.64, 0.076
	b64WordMean, b64WordSD             = 0.225, 0.10
	b64MinScore                        = -7
	// Runs whose segments (split at + / - _) are mostly plain, that is
	// short, single-case or Capitalised, are paths and identifiers such as
	// /usr/share/i18n/charmaps/JIS_C6229-1984-HAND-ADD, whatever their score.
	b64MaxPlain = 0.5
)

// digestLabels introduce content hashes, which are not secrets: sha256:…
// in image digests, sha512-… in lock files, h1:… in go.sum.
var digestLabels = []string{
	"sha1", "sha224", "sha256", "sha384", "sha512", "sha3-256", "sha3-512",
	"md5", "h1", "blake2b", "blake2s", "blake3", "xxh64", "crc32",
}

// encodedRule redacts long hex and base64 runs that look like key material
// (see the package documentation for the heuristics).
type encodedRule struct{}

func (encodedRule) find(t *text, out []span) []span {
	s := t.s
	// Find maximal runs of at least minHex base64 bytes. Probing the last
	// byte of a minHex window first lets ordinary text, whose runs are
	// words, be skipped a window at a time.
	for i := 0; i+minHex <= len(s); {
		if !b64Set[s[i+minHex-1]] {
			i += minHex
			continue
		}
		k := i + minHex - 2
		for k >= i && b64Set[s[k]] {
			k--
		}
		if k >= i {
			i = k + 1
			continue
		}
		// s[i-1] is not in the set (or i is 0), so a run starts at i.
		j := i + minHex
		for j < len(s) && b64Set[s[j]] {
			j++
		}
		out = classifyRun(s, i, j, out)
		i = j
	}
	return out
}

// classifyRun examines the maximal run s[i:j] of base64 characters.
func classifyRun(s string, i, j int, out []span) []span {
	// In JSON text a run can start with the letter of an escape: the n of
	// \n, the u00e9 of \u00e9. It belongs to the escape, not the run.
	if p, e := escapeCovering(s, i); p >= 0 {
		i = min(e, j)
		if j-i < minHex {
			return out
		}
	}
	if j-i >= minB64 && looksBase64(s[i:j]) && !digestLabelled(s, i) && !labelPrefixed(s[i:j]) &&
		!strings.HasSuffix(s[:i], ";base64,") && !sshPublicKey(s, i) && !mediaData(s[i:j]) {
		a, b := trimRun(s, i, j)
		if b == j {
			for b < len(s) && b < j+2 && s[b] == '=' {
				b++
			}
		}
		return append(out, span{a, b})
	}
	// Hex secrets are often part of a longer run: key-<32 hex>,
	// sk-or-v1-<64 hex>, 0x<64 hex>.
	for p := i; p < j; {
		if !isAlnum(s[p]) {
			p++
			continue
		}
		q := p + 1
		for q < j && isAlnum(s[q]) {
			q++
		}
		if q-p >= minHex {
			h := p
			if s[p] == '0' && (s[p+1] == 'x' || s[p+1] == 'X') {
				h += 2
			}
			if isHexSecret(s[h:q]) && !digestLabelled(s, p) && !providerID(s, p) {
				out = append(out, span{h, q})
			}
		}
		p = q
	}
	return out
}

func isHexSecret(v string) bool {
	if len(v) < minHex {
		return false
	}
	digit, upper := false, false
	letters, exps := 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isDigit(c):
			digit = true
		case 'a' <= c && c <= 'f':
			letters++
		case 'A' <= c && c <= 'F':
			letters++
			upper = true
		default:
			return false
		}
		if c == 'e' || c == 'E' {
			exps++
		}
	}
	switch {
	case len(v) == gitSHALen && !upper:
		return false // a git commit, tree or blob name
	case letters == 1 && exps == 1:
		return false // a number such as 1e300, maybe in JSON
	}
	return digit && letters > 0
}

// looksBase64 reports whether v, a run of base64 characters, has all three
// alphanumeric classes and looks random rather than like words.
func looksBase64(v string) bool {
	var counts [256]uint32
	var upper, lower, digit bool
	transitions := 0
	prev := -1
	for i := 0; i < len(v); i++ {
		c := v[i]
		counts[c]++
		class := 3
		switch {
		case isUpper(c):
			class, upper = 0, true
		case isLower(c):
			class, lower = 1, true
		case isDigit(c):
			class, digit = 2, true
		}
		if prev >= 0 && class != prev {
			transitions++
		}
		prev = class
	}
	if !upper || !lower || !digit || plainFraction(v) >= b64MaxPlain {
		return false
	}
	score := (entropy(&counts, len(v))-b64EntropyMean)/b64EntropySD +
		(float64(transitions)/float64(len(v)-1)-b64TransitionMean)/b64TransitionSD -
		(wordFraction(v)-b64WordMean)/b64WordSD
	return score >= b64MinScore
}

// wordFraction is the share of v's bytes inside word-like runs: a
// lower-case run of three or more letters, optionally Capitalised, or an
// upper-case run of four or more.
func wordFraction(v string) float64 {
	n := 0
	for i := 0; i < len(v); {
		j := i
		if isUpper(v[j]) {
			j++
		}
		k := j
		for k < len(v) && isLower(v[k]) {
			k++
		}
		if k-j >= 3 {
			n += k - i
			i = k
			continue
		}
		k = i
		for k < len(v) && isUpper(v[k]) {
			k++
		}
		if k-i >= 4 {
			n += k - i
			i = k
			continue
		}
		i++
	}
	return float64(n) / float64(len(v))
}

// plainFraction is the share of v's alphanumeric bytes inside plain
// segments (split at + / - _): six bytes or shorter, without both cases,
// or Capitalised.
func plainFraction(v string) float64 {
	plain, total := 0, 0
	for i := 0; i < len(v); {
		if !isAlnum(v[i]) {
			i++
			continue
		}
		j := i
		upper, lower := false, false
		for j < len(v) && isAlnum(v[j]) {
			upper = upper || isUpper(v[j])
			lower = lower || isLower(v[j])
			j++
		}
		seg := v[i:j]
		total += len(seg)
		capitalised := isUpper(seg[0])
		for k := 1; k < len(seg) && capitalised; k++ {
			capitalised = !isUpper(seg[k])
		}
		if len(seg) <= 6 || !(upper && lower) || capitalised {
			plain += len(seg)
		}
		i = j
	}
	if total == 0 {
		return 1
	}
	return float64(plain) / float64(total)
}

func entropy(counts *[256]uint32, n int) float64 {
	h := 0.0
	for _, c := range counts {
		if c == 0 {
			continue
		}
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// digestLabelled reports whether the run starting at i follows a digest
// label and a separator, as in sha256:…, sha512-…, md5=…, h1:….
func digestLabelled(s string, i int) bool {
	if i < 2 {
		return false
	}
	switch s[i-1] {
	case ':', '=', '-':
	default:
		return false
	}
	k := i - 1
	for k > 0 && (isAlnum(s[k-1]) || (s[k-1] == '-' && k-1 > 0 && isAlnum(s[k-2]))) && i-1-k < 10 {
		k--
	}
	label := strings.ToLower(s[k : i-1])
	for _, l := range digestLabels {
		if label == l || strings.HasSuffix(label, "-"+l) {
			return true
		}
	}
	return false
}

// labelPrefixed reports whether the run v starts with a digest label and a
// hyphen, as in the integrity field of lock files (sha512-…), where the
// hyphen makes the label part of the run.
func labelPrefixed(v string) bool {
	for _, l := range digestLabels {
		if len(v) > len(l) && v[len(l)] == '-' && strings.EqualFold(v[:len(l)], l) {
			return true
		}
	}
	return false
}

// minCore is the shortest part of a base64 run that trimRun will narrow
// the redaction to.
const minCore = 20

// trimRun narrows a base64 run s[i:j] judged secret to its random core,
// so that a URL keeps its readable parts: /v1/files/<id>/content loses the
// id only, /bot<token>/sendMessage keeps the method. It drops, at both
// ends, path segments that are words (lower-case letters and digits, or
// word-like runs such as sendMessage) and stray - or _, as long as at
// least minCore characters remain; otherwise the whole run goes.
func trimRun(s string, i, j int) (int, int) {
	a, b := i, j
	for {
		k := strings.IndexByte(s[a:b], '/')
		if k < 0 || !pathWord(s[a:a+k]) || b-(a+k+1) < minCore {
			break
		}
		a += k + 1
	}
	for {
		k := strings.LastIndexByte(s[a:b], '/')
		if k < 0 || !pathWord(s[a+k+1:b]) || k < minCore {
			break
		}
		b = a + k
	}
	for b-a > minCore && (s[a] == '-' || s[a] == '_') {
		a++
	}
	for b-a > minCore && (s[b-1] == '-' || s[b-1] == '_') {
		b--
	}
	return a, b
}

// pathWord reports whether seg reads as a path segment rather than key
// material: empty, lower-case letters and digits (at least two
// characters, one a letter), or made of word-like runs.
func pathWord(seg string) bool {
	if seg == "" {
		return true
	}
	plain, letter := len(seg) >= 2, false
	for k := 0; k < len(seg); k++ {
		c := seg[k]
		letter = letter || isLower(c)
		if !isLower(c) && !isDigit(c) && c != '-' && c != '_' {
			plain = false
		}
	}
	return (plain && letter) || (len(seg) >= 4 && wordFraction(seg) >= 0.8)
}

// sshPublicKey reports whether the run starting at i is the key of an
// OpenSSH public key line (ssh-ed25519 AAAA… comment), which is public.
func sshPublicKey(s string, i int) bool {
	if i == 0 || s[i-1] != ' ' {
		return false
	}
	w := s[max(0, i-48) : i-1]
	w = w[strings.LastIndexAny(w, " \t\r\n\"'`")+1:]
	for _, p := range []string{"ssh-", "ecdsa-sha2-", "sk-ssh-", "sk-ecdsa-"} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// mediaMagic starts base64-encoded PNG, JPEG, GIF, WebP and PDF data, which
// chat histories carry as image and document blocks; they are content, not
// credentials.
var mediaMagic = []string{"iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi0"}

func mediaData(v string) bool {
	for _, m := range mediaMagic {
		if strings.HasPrefix(v, m) {
			return true
		}
	}
	return false
}

// idPrefixes introduce provider object ids (request, response, message,
// run, call and batch ids), which operators quote to get support; some
// are 32 or more hex digits.
var idPrefixes = []string{"req_", "resp_", "msg_", "run_", "call_", "batch_"}

func providerID(s string, i int) bool {
	for _, p := range idPrefixes {
		if strings.HasSuffix(s[:i], p) && (i == len(p) || !isAlnum(s[i-len(p)-1])) {
			return true
		}
	}
	return false
}
