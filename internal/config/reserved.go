package config

import (
	"fmt"
	"slices"
)

// OwnerCallerName is the name the gateway gives the holder of
// gateway.api_key in its logs, audit lines and garra://policy.
const OwnerCallerName = "owner"

// ReservedOrchestratorNames are the names an orchestrator may not take,
// because the gateway already uses them for another caller: an
// orchestrator called "owner" would be indistinguishable from the owner in
// every log and audit line.
func ReservedOrchestratorNames() []string { return []string{OwnerCallerName} }

// OrchestratorNameReserved reports whether name is one of
// ReservedOrchestratorNames.
func OrchestratorNameReserved(name string) bool {
	return slices.Contains(ReservedOrchestratorNames(), name)
}

// orchestratorPolicyProblems are the problems of one orchestrator's name
// deny list and quota beyond the checks of Check's loop: a reserved name,
// deny_tools entries outside the closed set, a negative quota. field is
// the orchestrator's own prefix.
func orchestratorPolicyProblems(field string, o Orchestrator) []Problem {
	var ps []Problem
	if OrchestratorNameReserved(o.Name) {
		ps = append(ps, Problem{Field: field + ".name", Message: fmt.Sprintf("%q is reserved by the gateway (%v): choose another name", o.Name, ReservedOrchestratorNames())})
	}
	for _, t := range o.DenyTools {
		if !slices.Contains(OrchestratorTools, t) {
			ps = append(ps, Problem{Field: field + ".deny_tools", Message: fmt.Sprintf("%q is not one of %v", t, OrchestratorTools)})
		}
	}
	return append(ps, quotaProblems(field, o.Quota)...)
}
