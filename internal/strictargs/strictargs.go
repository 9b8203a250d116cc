// Package strictargs decodes MCP tool arguments the way their schemas say
// (additionalProperties false, exact key names, exact types) and names the
// offending field in every error, so a caller or a model can fix its call.
package strictargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// Decode decodes a tool's arguments into dst, a struct whose fields
// are pointers so that absence can be told from a zero value. Unknown
// fields, wrong types, a non-object and trailing data are errors, and the
// message names the offending field, so the model can fix its call.
func Decode(raw json.RawMessage, dst any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		trimmed = []byte("{}")
	}
	if trimmed[0] != '{' {
		return errors.New("arguments: must be a JSON object")
	}
	// encoding/json matches field names case-insensitively; the schema
	// does not. Read the keys first and check them exactly.
	var keys map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&keys); err != nil {
		return describeDecodeError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("arguments: unexpected data after the JSON object")
	}
	known := FieldNames(dst)
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !known[k] {
			return fmt.Errorf("%s: unknown field (additionalProperties is false)", k)
		}
	}
	dec = json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return describeDecodeError(err)
	}
	return nil
}

// FieldNames lists the JSON names of the fields of the struct dst
// points to.
func FieldNames(dst any) map[string]bool {
	t := reflect.TypeOf(dst)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	names := map[string]bool{}
	for f := range t.Fields() {
		if f.Anonymous && f.Tag.Get("json") == "" {
			// An embedded struct contributes its own fields.
			for n := range FieldNames(reflect.New(f.Type).Interface()) {
				names[n] = true
			}
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if name != "-" {
			names[name] = true
		}
	}
	return names
}

func describeDecodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		// Arguments are flat objects: the last path element is the property
		// (earlier ones name embedded Go structs, which callers never see).
		field := typeErr.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:]
		}
		if field == "" {
			field = "arguments"
		}
		return fmt.Errorf("%s: must be %s, got %s", field, kindOf(typeErr.Type.String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("arguments: invalid JSON at offset %d", syntaxErr.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("arguments: invalid JSON (truncated)")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return fmt.Errorf("%s: unknown field (additionalProperties is false)", field)
	}
	return fmt.Errorf("arguments: %w", err)
}

func kindOf(goType string) string {
	switch strings.TrimLeft(goType, "*") {
	case "string":
		return "a string"
	case "int", "int64":
		return "an integer"
	case "bool":
		return "a boolean"
	}
	return goType
}
