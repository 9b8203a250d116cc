package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeRequest must take a message for a request exactly when the SDK
// does, with the same id, method and params: the shape decides which call
// a cancellation names and whether a response streams.
func TestDecodeRequestAgreesWithSDK(t *testing.T) {
	deep := strings.Repeat("[", 1001) + strings.Repeat("]", 1001)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`,
		`{"jsonrpc":"2.0","id":"7","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":7.9,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":-3,"method":"tools/list"}`,
		`  {"jsonrpc":"2.0","id":1,"method":"ping"}  trailing`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`,
		`{"jsonrpc":"2.0","method":""}`,
		`{"jsonrpc":"2.0","method":null}`,
		`{"jsonrpc":"2.0","method":7}`,
		`{"jsonrpc":"2.0","id":true,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":` + deep + `}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":"` + deep + `"}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":"\"[{"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`not json`, ``,
	} {
		got, ok := decodeRequest([]byte(msg))
		m, err := jsonrpc.DecodeMessage([]byte(msg))
		req, isReq := m.(*jsonrpc.Request)
		want := err == nil && isReq
		if ok != want {
			t.Errorf("%.80q: request = %v, the SDK says %v (%v)", msg, ok, want, err)
			continue
		}
		if ok && (got.id != req.ID || got.method != req.Method || !bytes.Equal(got.params, req.Params)) {
			t.Errorf("%.80q: decoded %+v, the SDK %+v", msg, got, req)
		}
	}
}

// The body is read and parsed once, whichever layer asks first, and the
// SDK still reads all of it.
func TestReadBodyOnce(t *testing.T) {
	const body = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]`
	src := &countingReader{r: strings.NewReader(body)}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.Body = io.NopCloser(src)
	r, first := readBody(r)
	reads := src.n
	r2, again := readBody(r)
	if again != first || r2 != r || src.n != reads {
		t.Fatal("the body was read or parsed a second time")
	}
	if first.batch != 2 || !reflect.DeepEqual(first.shape.cancelled, []jsonrpc.ID{id(t, 1.0)}) || bodyIn(r) != first {
		t.Fatalf("body = %+v", first)
	}
	rest, err := io.ReadAll(r.Body)
	if err != nil || string(rest) != body {
		t.Fatalf("what the SDK reads: %q, %v", rest, err)
	}
	if b := bodyIn(httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(context.Background())); b.batch != 1 || b.whole {
		t.Fatalf("no body read: %+v", b)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.n++
	return c.r.Read(p)
}
