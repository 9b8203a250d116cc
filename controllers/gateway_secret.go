package controllers

import (
	"io"

	corev1 "k8s.io/api/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// gatewaySecret is NAME-gateway with a generated api-key.
func gatewaySecret(gs *garrav1alpha1.GarraServer, rand io.Reader) (*corev1.Secret, error) {
	return generatedSecret(serverPlacement(gs), gatewayName(gs), labels(gs, ComponentGateway, ""), rand, KeyAPIKey)
}
