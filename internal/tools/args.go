package tools

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Field checks shared by the tools. Each returns an error naming the field.

func requiredString(name string, v *string, maxLen int) (string, error) {
	if v == nil {
		return "", fmt.Errorf("%s: required", name)
	}
	return optionalString(name, v, maxLen)
}

func optionalString(name string, v *string, maxLen int) (string, error) {
	if v == nil {
		return "", nil
	}
	switch {
	case strings.IndexByte(*v, 0) >= 0:
		return "", fmt.Errorf("%s: must not contain NUL", name)
	case !utf8.ValidString(*v):
		return "", fmt.Errorf("%s: must be valid UTF-8", name)
	case len(*v) > maxLen:
		return "", fmt.Errorf("%s: longer than %d bytes", name, maxLen)
	}
	return *v, nil
}

func intInRange(name string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, fmt.Errorf("%s: must be between %d and %d, got %d", name, lo, hi, *v)
	}
	return *v, nil
}

// Schema building. Schemas are plain JSON objects marshalled once;
// encoding/json sorts map keys, so the bytes are stable.

type prop map[string]any

func stringProp(desc string, maxLen int) prop {
	return prop{"type": "string", "description": desc, "maxLength": maxLen}
}

func intProp(desc string, lo, hi, def int) prop {
	return prop{"type": "integer", "description": desc, "minimum": lo, "maximum": hi, "default": def}
}

func boolProp(desc string) prop {
	return prop{"type": "boolean", "description": desc, "default": false}
}

func objectSchema(props map[string]prop, required ...string) json.RawMessage {
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic("tools: schema does not marshal: " + err.Error())
	}
	return b
}
