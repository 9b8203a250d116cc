package config

import (
	"bytes"
	"encoding/json"
	"errors"
)

// UnmarshalJSON accepts `nome` as an alias of `name` (configs written for
// the original Portuguese-speaking deployments), and nothing else unknown.
func (o *Orchestrator) UnmarshalJSON(data []byte) error {
	type plain Orchestrator
	var aux struct {
		plain
		Nome string `json:"nome"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&aux); err != nil {
		return err
	}
	if aux.Nome != "" {
		if aux.Name != "" && aux.Name != aux.Nome {
			return errors.New("orchestrator: both name and nome are set, and differ")
		}
		aux.Name = aux.Nome
	}
	*o = Orchestrator(aux.plain)
	return nil
}
