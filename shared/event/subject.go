package event

import (
	"fmt"
	"strings"
)

// Subject returns the NATS subject an event of this type is published on:
// order.<x> goes to orders.<x> (stream ORDERS) and inventory.<x> to
// inventory.<x> (stream INVENTORY).
func Subject(eventType string) (string, error) {
	family, name, ok := strings.Cut(eventType, ".")
	if !ok || name == "" || strings.ContainsAny(name, ".*> \t") {
		return "", fmt.Errorf("event type %q: want <family>.<name>, such as order.created", eventType)
	}
	switch family {
	case "order":
		return "orders." + name, nil
	case "inventory":
		return "inventory." + name, nil
	}
	return "", fmt.Errorf("event type %q: family %q has no stream (want order.* or inventory.*)", eventType, family)
}
