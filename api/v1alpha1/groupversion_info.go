// Package v1alpha1 is the garra.garraia.io/v1alpha1 API: the GarraServer
// custom resource that the operator (controllers/) turns into a gateway and
// one sandbox per orchestrator, and the Orchestrator, a team's own
// orchestrator in its namespace that attaches to a GarraServer.
//
// Validation lives in the schema wherever it can (enums, bounds, patterns,
// list-map keys and CEL rules); defaults are markers, so `kubectl get -o yaml`
// shows what the controller acts on.
//
// +kubebuilder:object:generate=true
// +groupName=garra.garraia.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "garra.garraia.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &GarraServer{}, &GarraServerList{}, &Orchestrator{}, &OrchestratorList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
