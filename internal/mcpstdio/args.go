package mcpstdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// decodeArgs decodes tool arguments strictly into dst (a struct of pointer
// fields): unknown fields, wrong types and trailing data are errors naming
// the field. This is our own check rather than the SDK's schema validation,
// because the spec wants -32602 for bad arguments and the SDK answers those
// with an isError tool result.
func decodeArgs(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if bytes.TrimSpace(raw)[0] != '{' {
		return errors.New("arguments: must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &typeErr):
			return fmt.Errorf("%s: must be %s, got %s", typeErr.Field, jsonTypeName(typeErr.Type.String()), typeErr.Value)
		case errors.As(err, &syntaxErr):
			return fmt.Errorf("arguments: invalid JSON: %v", err)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			field := strings.TrimPrefix(err.Error(), "json: unknown field ")
			return fmt.Errorf("%s: unknown field (additionalProperties is false)", strings.Trim(field, `"`))
		default:
			return fmt.Errorf("arguments: %v", err)
		}
	}
	if dec.More() {
		return errors.New("arguments: trailing data after the object")
	}
	return nil
}

func jsonTypeName(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "int", "int64":
		return "an integer"
	case "bool":
		return "a boolean"
	}
	return goType
}
