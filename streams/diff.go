package streams

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// diff lists the fields where the server's configuration differs from the
// declared one, as "field: server → declared". Both sides are compared as
// JSON with zero values treated as absent, so a default the server fills in
// is not a difference, and a setting someone added by hand is.
func diff(declared, actual any) ([]string, error) {
	want, err := flatten(declared)
	if err != nil {
		return nil, err
	}
	have, err := flatten(actual)
	if err != nil {
		return nil, err
	}
	// The server names a durable consumer after its durable name.
	if have["name"] != nil && reflect.DeepEqual(have["name"], want["durable_name"]) {
		delete(have, "name")
	}
	var out []string
	for _, k := range unionKeys(want, have) {
		if !reflect.DeepEqual(want[k], have[k]) {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, show(k, have[k]), show(k, want[k])))
		}
	}
	return out, nil
}

// flatten turns a config into its JSON fields without zero values and
// without the metadata the server manages itself (_nats.*).
func flatten(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		for k := range md {
			if strings.HasPrefix(k, "_nats.") {
				delete(md, k)
			}
		}
	}
	for k, v := range m {
		if isZero(v) {
			delete(m, k)
		}
	}
	return m, nil
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		// The nats CLI sends an unset pause_until as Go's zero time.
		return v == "" || v == "0001-01-01T00:00:00Z"
	case []any:
		return len(v) == 0
	case map[string]any:
		for _, e := range v {
			if !isZero(e) {
				return false
			}
		}
		return true
	}
	return false
}

func unionKeys(a, b map[string]any) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// durations are the fields the wire format carries as nanoseconds.
var durations = []string{
	"max_age", "duplicate_window", "subject_delete_marker_ttl",
	"ack_wait", "idle_heartbeat", "inactive_threshold", "max_expires",
}

func show(field string, v any) string {
	if v == nil {
		return "(unset)"
	}
	if ns, ok := v.(float64); ok && slices.Contains(durations, field) {
		return time.Duration(ns).String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}
