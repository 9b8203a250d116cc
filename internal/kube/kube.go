// Package kube holds every Kubernetes API call a garra process makes: the
// gateway's TokenReviews, sandbox wakes and the watch of its own policy
// objects, and config check's version probe. It speaks through client-go's REST client and the API types, and
// deliberately not through the typed clientsets: any one of those links
// client-go's global scheme, which registers every API group in package
// init, a cost each garra command (the laptop's stdio server included)
// would pay before main.
//
// The operator's manager is not served here: it is a controller-runtime
// program with a scheme of its own.
package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// UserAgent is what garra's requests say they are, so that audit logs of
// the API server tell them from the operator's.
const UserAgent = "garra"

// Config is the API server configuration of a garra process: the
// kubeconfig file when one is named, else the pod's own ServiceAccount.
func Config(kubeconfig string) (*rest.Config, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("API server config: %w", err)
	}
	return rc, nil
}

// statusCodecs decodes the API server's metav1.Status answers into
// errors that apimachinery's errors package understands (IsNotFound,
// IsForbidden, ...). Objects themselves are plain JSON. Built on first
// use: a command that never calls the API server does not pay for it.
var statusCodecs = sync.OnceValue(func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
})

// Client sends garra's few API requests.
type Client struct {
	rest *rest.RESTClient
	// watchRest is rest without the per-request timeout, which would cut
	// every watch; a watch bounds itself (Watch).
	watchRest *rest.RESTClient
	host      string
}

// New builds a Client on rc (not modified). timeout, when positive,
// bounds every request.
func New(rc *rest.Config, timeout time.Duration) (*Client, error) {
	c := rest.CopyConfig(rc)
	c.GroupVersion = &schema.GroupVersion{}
	c.NegotiatedSerializer = statusCodecs().WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = UserAgent
	}
	w := rest.CopyConfig(c)
	w.Timeout = 0
	if timeout > 0 {
		c.Timeout = timeout
	}
	r, err := rest.UnversionedRESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", rc.Host, err)
	}
	wr, err := rest.UnversionedRESTClientFor(w)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", rc.Host, err)
	}
	return &Client{rest: r, watchRest: wr, host: rc.Host}, nil
}

// Host is the API server's address, for messages.
func (c *Client) Host() string { return c.host }

// Version asks the API server for its version.
func (c *Client) Version(ctx context.Context) (version.Info, error) {
	var v version.Info
	err := c.do(ctx, c.rest.Get().AbsPath("/version"), &v)
	return v, err
}

// TokenReviews sends TokenReviews; it is what authn.Reviewer asks for.
func (c *Client) TokenReviews() TokenReviews { return TokenReviews{c} }

// TokenReviews creates authentication.k8s.io/v1 TokenReviews.
type TokenReviews struct{ c *Client }

// Create sends review and returns the API server's verdict.
func (t TokenReviews) Create(ctx context.Context, review *authv1.TokenReview, opts metav1.CreateOptions) (*authv1.TokenReview, error) {
	in := *review
	in.APIVersion, in.Kind = authv1.SchemeGroupVersion.String(), "TokenReview"
	body, err := json.Marshal(&in)
	if err != nil {
		return nil, fmt.Errorf("encode TokenReview: %w", err)
	}
	req := t.c.rest.Post().AbsPath("/apis/authentication.k8s.io/v1/tokenreviews").Body(body)
	if opts.FieldManager != "" {
		req = req.Param("fieldManager", opts.FieldManager)
	}
	out := &authv1.TokenReview{}
	if err := t.c.do(ctx, req, out); err != nil {
		return nil, fmt.Errorf("create TokenReview: %w", err)
	}
	return out, nil
}

// Deployment is what garra reads of a Deployment: its metadata and how
// many replicas are available. The full apps/v1 type would link the core
// API group (its pod template), whose package init every command would
// pay for one number.
type Deployment struct {
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Replicas *int32 `json:"replicas,omitempty"`
	} `json:"spec"`
	Status struct {
		AvailableReplicas int32 `json:"availableReplicas,omitempty"`
	} `json:"status"`
}

// MergePatchDeployment applies a JSON merge patch to the Deployment
// namespace/name as fieldManager and returns the Deployment as patched.
func (c *Client) MergePatchDeployment(ctx context.Context, namespace, name string, patch []byte, fieldManager string) (*Deployment, error) {
	req := c.rest.Patch(types.MergePatchType).
		AbsPath("/apis/apps/v1/namespaces", namespace, "deployments", name).
		Param("fieldManager", fieldManager).
		Body(patch)
	out := &Deployment{}
	if err := c.do(ctx, req, out); err != nil {
		return nil, fmt.Errorf("patch Deployment %s/%s: %w", namespace, name, err)
	}
	return out, nil
}

// do sends req and decodes a successful answer's JSON into out. A refusal
// comes back as the REST client's error (a StatusError when the API server
// said why).
func (c *Client) do(ctx context.Context, req *rest.Request, out any) error {
	res := req.Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		return err
	}
	var code int
	if res.StatusCode(&code); code != 0 && (code < http.StatusOK || code >= http.StatusMultipleChoices) {
		return fmt.Errorf("unexpected status %d from %s", code, c.host)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode the answer of %s: %w", c.host, err)
	}
	return nil
}
