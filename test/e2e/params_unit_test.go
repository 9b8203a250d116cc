//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// These run without a cluster (make test runs them: `-run 'TestParams|TestInCluster'`).

func TestParams(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // substring of the error; "" = valid
	}{
		{"defaults", map[string]string{"KUBECONFIG": "/k"}, ""},
		{"no kubeconfig", map[string]string{}, "KUBECONFIG is not set"},
		{"loader without {}", map[string]string{"KUBECONFIG": "/k", "E2E_LOADER": "kind load image-archive", "E2E_IMAGES_DIR": "/i"}, "has no {}"},
		{"loader without images", map[string]string{"KUBECONFIG": "/k", "E2E_LOADER": "ctr import {}"}, "E2E_IMAGES_DIR is not"},
		{"relative hostPath dir", map[string]string{"KUBECONFIG": "/k", "E2E_HOSTPATH_DIR": "pv"}, "is not absolute"},
		{"relative dir is fine with a class", map[string]string{"KUBECONFIG": "/k", "E2E_HOSTPATH_DIR": "pv", "E2E_STORAGE_CLASS": "standard"}, ""},
		{"unknown access", map[string]string{"KUBECONFIG": "/k", "E2E_ACCESS": "nodeport"}, `E2E_ACCESS "nodeport"`},
		{"port-forward", map[string]string{"KUBECONFIG": "/k", "E2E_ACCESS": "port-forward"}, ""},
	}
	vars := []string{"KUBECONFIG", "E2E_LOADER", "E2E_IMAGES_DIR", "E2E_HOSTPATH_DIR", "E2E_STORAGE_CLASS", "E2E_ACCESS", "E2E_IMAGE_TAG"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, tt.env[v])
			}
			p, err := loadParams()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if tt.want == "" && p.GarraImage != "localhost/garra:e2e" {
				t.Errorf("garra image %q", p.GarraImage)
			}
		})
	}
}

func TestInCluster(t *testing.T) {
	for target, ok := range map[string]bool{
		"127.0.0.1:3888":      true,  // a port-forward
		"10.96.12.7:3888":     true,  // a ClusterIP
		"10.244.0.9:8080":     true,  // a pod
		"[::1]:3888":          true,  // loopback, IPv6
		"[fd00:10:96::1]:80":  true,  // a private IPv6 Service
		"[::ffff:10.0.0.1]:1": true,  // IPv4-mapped private
		"8.8.8.8:53":          false, // anywhere else
		"192.0.2.2:3888":      false, // documentation range: not private
		"[2001:db8::1]:80":    false,
	} {
		if err := inCluster(target); (err == nil) != ok {
			t.Errorf("inCluster(%s) = %v, want allowed=%v", target, err, ok)
		}
	}
}
