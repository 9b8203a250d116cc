package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/garraia/garra/internal/strictargs"
)

// web_fetch and web_search limits.
const (
	maxURLLen            = 8 << 10
	defaultFetchBytes    = 1 << 20
	maxFetchBytes        = 10 << 20
	webTimeout           = 30 * time.Second
	maxRedirects         = 10
	maxQueryLen          = 400 // Brave's own limit
	defaultSearchResults = 5
	maxSearchResults     = 20
	userAgent            = "garra-tools/1 (+https://github.com/garraia/garra)"
)

func webFetchTool(guarded bool) Tool {
	desc := "Fetch a URL with HTTP GET (http and https only) and return its text; HTML is reduced to plain text. " +
		"The download stops at max_bytes; long output is truncated. Non-2xx statuses are errors."
	if guarded {
		desc += " Only public internet addresses are reachable: loopback, private and link-local ones are refused."
	}
	return Tool{
		Name:        ToolWebFetch,
		Description: desc,
		InputSchema: objectSchema(map[string]prop{
			"url":       stringProp("The http:// or https:// URL to fetch.", maxURLLen),
			"max_bytes": intProp("Read at most this many bytes of the response body.", 1, maxFetchBytes, defaultFetchBytes),
		}, "url"),
	}
}

func webSearchTool() Tool {
	return Tool{
		Name:        ToolWebSearch,
		Description: "Search the web (Brave Search) and return the top results: title, URL and snippet.",
		InputSchema: objectSchema(map[string]prop{
			"query": stringProp("The search query.", maxQueryLen),
			"count": intProp("Number of results.", 1, maxSearchResults, defaultSearchResults),
		}, "query"),
	}
}

type webFetchArgs struct {
	URL      *string `json:"url"`
	MaxBytes *int    `json:"max_bytes"`
}

type webSearchArgs struct {
	Query *string `json:"query"`
	Count *int    `json:"count"`
}

// httpURL parses s and accepts only absolute http and https URLs with a
// host.
func httpURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("not a valid URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("scheme %q is not allowed (only http and https)", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("the URL has no host")
	}
	return u, nil
}

// withRedirectPolicy returns base with a redirect policy that keeps to
// http/https and a bounded number of hops. The struct is copied so the
// caller's client is not modified.
func withRedirectPolicy(base *http.Client) *http.Client {
	c := *base
	prev := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		if _, err := httpURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirect refused: %w", err)
		}
		if prev != nil {
			return prev(req, via)
		}
		return nil
	}
	return &c
}

func (l *Local) callWebFetch(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a webFetchArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return argsError(ToolWebFetch, err), nil
	}
	rawURL, err := requiredString("url", a.URL, maxURLLen)
	if err != nil {
		return argsError(ToolWebFetch, err), nil
	}
	maxBytes, err := intInRange("max_bytes", a.MaxBytes, defaultFetchBytes, 1, maxFetchBytes)
	if err != nil {
		return argsError(ToolWebFetch, err), nil
	}
	u, err := httpURL(rawURL)
	if err != nil {
		return argsError(ToolWebFetch, fmt.Errorf("url: %w", err)), nil
	}
	reqCtx, cancel := context.WithTimeout(ctx, webTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
	if err != nil {
		return argsError(ToolWebFetch, fmt.Errorf("url: %w", err)), nil
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Accept", "text/html, text/plain, application/json, text/*;q=0.9, */*;q=0.5")
	resp, err := withRedirectPolicy(l.fetch).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		var refused *egressRefusal
		if errors.As(err, &refused) {
			// Not fetchErr's text: the dial error around it names the
			// address and port that were refused.
			return errorResult("%s", refused.Error()), nil
		}
		return errorResult("web_fetch: %v", fetchErr(err)), nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBytes)+1))
	if err != nil && ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	truncated := len(body) > maxBytes
	if truncated {
		body = body[:maxBytes]
	}
	text, textErr := bodyText(resp.Header.Get("Content-Type"), body)

	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %s\n", resp.Status)
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		fmt.Fprintf(&b, "Content-Type: %s\n", ct)
	}
	if resp.Request != nil && resp.Request.URL.String() != u.String() {
		fmt.Fprintf(&b, "Final-URL: %s\n", resp.Request.URL)
	}
	b.WriteString("\n")
	switch {
	case textErr != nil:
		b.WriteString(textErr.Error())
	default:
		b.WriteString(text)
		if err != nil {
			fmt.Fprintf(&b, "\n[body incomplete: %v]", err)
		} else if truncated {
			fmt.Fprintf(&b, "\n[body truncated at max_bytes=%d]", maxBytes)
		}
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	return Result{Output: capOutput(b.String(), l.maxOut), IsError: !ok || textErr != nil}, nil
}

// fetchErr strips the method and URL that net/http puts around an error;
// the model knows the URL it asked for.
func fetchErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if errors.Is(ue.Err, context.DeadlineExceeded) {
			return fmt.Errorf("timed out after %s", webTimeout)
		}
		return ue.Err
	}
	return err
}

// bodyText returns the body as text: HTML reduced to its visible text,
// other text types as they are. Binary content is an error.
func bodyText(contentType string, body []byte) (string, error) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if contentType == "" || err != nil {
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	body = trimPartialRune(body) // the cap may have cut a character
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return htmlToText(string(body)), nil
	case isTextType(mediaType):
		return strings.ToValidUTF8(string(body), "\uFFFD"), nil
	}
	return "", fmt.Errorf("[binary content (%s, %d bytes) not shown]", mediaType, len(body))
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}

func isTextType(mt string) bool {
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/json", mt == "application/xml", mt == "application/javascript",
		mt == "application/ecmascript", mt == "application/x-yaml", mt == "application/yaml",
		mt == "application/toml", mt == "application/x-sh", mt == "application/sql",
		mt == "application/graphql", mt == "application/x-ndjson":
		return true
	}
	return false
}

var (
	htmlDropBlocks = sync.OnceValue(func() []*regexp.Regexp {
		return []*regexp.Regexp{
			regexp.MustCompile(`(?is)<script\b.*?</script\s*>`),
			regexp.MustCompile(`(?is)<style\b.*?</style\s*>`),
			regexp.MustCompile(`(?is)<noscript\b.*?</noscript\s*>`),
			regexp.MustCompile(`(?is)<template\b.*?</template\s*>`),
			regexp.MustCompile(`(?is)<head\b.*?</head\s*>`),
			regexp.MustCompile(`(?s)<!--.*?-->`),
		}
	})
	htmlBreaks = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)<(br|/p|/div|/li|/h[1-6]|/tr|/table|/section|/article|/header|/footer|/pre|/blockquote|hr)\b[^>]*>`)
	})
	htmlItems = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)<li\b[^>]*>`)
	})
	htmlTags = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)<[^>]*>`)
	})
	htmlSpaces = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`[ \t\r\f\v\x{00A0}]+`)
	})
	htmlBlankLines = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\n{3,}`)
	})
)

// htmlToText is a deliberately small HTML-to-text reduction: drop scripts,
// styles and comments, turn block ends into newlines, strip tags, decode
// entities and squeeze whitespace. Good enough for a model to read.
func htmlToText(s string) string {
	for _, re := range htmlDropBlocks() {
		s = re.ReplaceAllString(s, "")
	}
	s = htmlBreaks().ReplaceAllString(s, "\n")
	s = htmlItems().ReplaceAllString(s, "\n- ")
	s = htmlTags().ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = strings.ToValidUTF8(s, "\uFFFD")
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = strings.TrimSpace(htmlSpaces().ReplaceAllString(line, " "))
	}
	s = strings.Join(lines, "\n")
	s = htmlBlankLines().ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}

// braveResponse is the part of the Brave Search API answer we read.
type braveResponse struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"results"`
	} `json:"web"`
}

func (l *Local) callWebSearch(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a webSearchArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return argsError(ToolWebSearch, err), nil
	}
	query, err := requiredString("query", a.Query, maxQueryLen)
	if err == nil && strings.TrimSpace(query) == "" {
		err = errors.New("query: must not be empty")
	}
	if err != nil {
		return argsError(ToolWebSearch, err), nil
	}
	count, err := intInRange("count", a.Count, defaultSearchResults, 1, maxSearchResults)
	if err != nil {
		return argsError(ToolWebSearch, err), nil
	}
	q := url.Values{"q": {strings.TrimSpace(query)}, "count": {strconv.Itoa(count)}}
	reqCtx, cancel := context.WithTimeout(ctx, webTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, l.braveBase+"/res/v1/web/search?"+q.Encode(), nil)
	if err != nil {
		return errorResult("web_search: bad search endpoint"), nil
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("X-Subscription-Token", l.braveKey)
	resp, err := withRedirectPolicy(l.http).Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return errorResult("web_search: %v", fetchErr(err)), nil
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return errorResult("web_search: reading the response: %v", err), nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The body is not echoed: it may quote the request, and we never
		// want the key near a model.
		return errorResult("web_search: Brave Search answered HTTP %s", resp.Status), nil
	}
	var br braveResponse
	if err := json.Unmarshal(body, &br); err != nil {
		return errorResult("web_search: Brave Search returned a response that is not the expected JSON"), nil
	}
	if len(br.Web.Results) == 0 {
		return Result{Output: "no results"}, nil
	}
	var b strings.Builder
	for i, r := range br.Web.Results {
		if i == count {
			break
		}
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, oneLine(htmlToText(r.Title)), r.URL)
		if d := oneLine(htmlToText(r.Description)); d != "" {
			fmt.Fprintf(&b, "   %s\n", d)
		}
	}
	return Result{Output: capOutput(strings.TrimRight(b.String(), "\n"), l.maxOut)}, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
