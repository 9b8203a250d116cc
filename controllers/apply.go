package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namedApply is an apply configuration that knows its name (every
// generated client-go apply configuration does).
type namedApply interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
}

// applyIfChanged server-side applies desired under FieldOwner unless the
// fields FieldOwner owns in the live object (read from the cache) already
// equal it, so a reconcile that finds everything as desired sends no write.
// extract is client-go's Extract<Kind> for the live type. It reports
// whether it wrote.
func applyIfChanged[O client.Object, AC namedApply](ctx context.Context, c client.Client, desired AC, live O, extract func(O, string) (AC, error)) (bool, error) {
	key := types.NamespacedName{Namespace: deref(desired.GetNamespace()), Name: deref(desired.GetName())}
	err := c.Get(ctx, key, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("get %s: %w", key, err)
	default:
		owned, err := extract(live, FieldOwner)
		if err != nil {
			return false, fmt.Errorf("extract %s: %w", key, err)
		}
		same, err := sameApply(owned, desired)
		if err != nil {
			return false, fmt.Errorf("compare %s: %w", key, err)
		}
		if same {
			return false, nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("apply %s: %w", key, err)
	}
	return true, nil
}

// sameApply compares two apply configurations as the JSON the API server
// would see (so quantities compare canonically), ignoring empty objects and
// lists, which SSA records but which carry no value.
func sameApply(a, b any) (bool, error) {
	na, err := normalized(a)
	if err != nil {
		return false, err
	}
	nb, err := normalized(b)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(na, nb), nil
}

func normalized(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return prune(out), nil
}

// prune drops empty maps and lists, recursively; nil if v becomes empty.
func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if p := prune(e); p == nil {
				delete(t, k)
			} else {
				t[k] = p
			}
		}
		if len(t) == 0 {
			return nil
		}
		return t
	case []any:
		out := t[:0]
		for _, e := range t {
			if p := prune(e); p != nil {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
