package strictargs

import (
	"encoding/json"
	"strings"
	"testing"
)

type base struct {
	Message *string `json:"message"`
	Timeout *int    `json:"timeout_secs"`
}

type extended struct {
	base
	Dir *string `json:"working_dir"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		raw  string
		want string // error prefix; "" = ok
	}{
		{`{"message":"x","timeout_secs":3,"working_dir":"/w"}`, ""},
		{``, ""},
		{`null`, ""},
		{`{"Message":"x"}`, "Message: unknown field"},
		{`{"message":"x","extra":1}`, "extra: unknown field"},
		{`{"message":5}`, "message: must be a string"},
		{`{"timeout_secs":1.5}`, "timeout_secs: must be an integer"},
		{`{"timeout_secs":"3"}`, "timeout_secs: must be an integer"},
		{`[1]`, "arguments: must be a JSON object"},
		{`{"message":"x"} {}`, "arguments: unexpected data"},
		{`{"message":`, "arguments: invalid JSON"},
	}
	for _, tt := range tests {
		var dst extended
		err := Decode(json.RawMessage(tt.raw), &dst)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.raw, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want prefix %q", tt.raw, err, tt.want)
		}
	}
	var dst extended
	if err := Decode(json.RawMessage(`{"message":"m","working_dir":"/w"}`), &dst); err != nil || *dst.Message != "m" || *dst.Dir != "/w" {
		t.Fatalf("embedded fields not decoded: %v", err)
	}
}

func TestFieldNamesFollowsEmbedding(t *testing.T) {
	got := FieldNames(&extended{})
	if len(got) != 3 || !got["message"] || !got["timeout_secs"] || !got["working_dir"] {
		t.Fatalf("FieldNames = %v", got)
	}
}
