package router

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/resource"
)

// WorkflowsBucket keeps tenants' own workflows (streams/KV_workflows).
const WorkflowsBucket = "workflows"

// The bounds of a tenant's workflows: a route of MaxSteps steps, its
// strings at their bounds, fits MaxWorkflowBytes many times over; a
// tenant's workflows are few, for each is matched against every event.
const (
	MaxWorkflowBytes = 32 << 10
	MaxWorkflows     = 100
	// maxQuoted bounds what an error repeats of a value a tenant wrote,
	// maxMessage a decoder's whole message, which may repeat several.
	maxQuoted  = 256
	maxMessage = 1024
)

// Sentinels a workflow store's errors match.
var (
	// ErrNoWorkflow: the tenant has no workflow of that name.
	ErrNoWorkflow = errors.New("no such workflow")
	// ErrInvalidWorkflow: a workflow refused; the error names the field.
	ErrInvalidWorkflow = errors.New("invalid workflow")
)

// Workflow is a tenant's own route (with its steps): for the tenant's
// events it matches, it replaces the configured routes (Config.routesFor).
type Workflow struct {
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	Route     Route     `json:"route"`
	UpdatedAt time.Time `json:"updated_at"`
}

// workflowName is a workflow's name: one key token of a bucket, short.
var workflowName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Workflows is the resource kind of tenants' workflows, keyed
// <tenant>.<name>.
var Workflows = resource.Kind[Workflow]{Name: "workflow", Bucket: WorkflowsBucket, NotFound: ErrNoWorkflow,
	Key:      func(w Workflow) string { return WorkflowKey(w.Tenant, w.Name) },
	Validate: Workflow.Validate, MaxBytes: MaxWorkflowBytes, MaxPerTenant: MaxWorkflows}

// WorkflowKey is where tenant's workflow name is kept.
func WorkflowKey(tenant, name string) string { return tenant + "." + name }

// ValidWorkflowName reports whether name may name a workflow: 1-64
// letters, digits, '_' or '-'.
func ValidWorkflowName(name string) bool { return workflowName.MatchString(name) }

// Validate checks a workflow as the config checks a route of
// router.routes, each problem naming its field under "workflow".
func (w Workflow) Validate() error {
	if !ValidWorkflowName(w.Name) {
		return fmt.Errorf("%w: name %q must be 1-64 letters, digits, '_' or '-'", ErrInvalidWorkflow, Quoted(w.Name))
	}
	if w.Route.Stage != 0 {
		return fmt.Errorf("%w: stage is the router's, set when a run's send is planned, never stored", ErrInvalidWorkflow)
	}
	p := &problems{}
	// The route's own strings are bounded before any check quotes them;
	// its steps' are, step by step, in validate.
	if !checkFieldSizes(p, "workflow", reflect.ValueOf(w.Route)) {
		return fmt.Errorf("%w: %s", ErrInvalidWorkflow, strings.Join(p.out, "; "))
	}
	if out := w.Route.withDefaults().validate("workflow"); len(out) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidWorkflow, strings.Join(out, "; "))
	}
	return nil
}

// ParseWorkflow reads a route as router.routes holds one, in JSON (or
// YAML), decoded as strictly as the config file: a key the route, or a
// step's kind, does not have is an error naming it. It does not validate
// the route (Workflow.Validate does).
func ParseWorkflow(body []byte) (Route, error) {
	dec := yaml.NewDecoder(bytes.NewReader(body))
	dec.KnownFields(true)
	var r Route
	if err := dec.Decode(&r); err != nil {
		return Route{}, fmt.Errorf("%w: %s", ErrInvalidWorkflow, printable(strings.TrimPrefix(err.Error(), "yaml: "), maxMessage))
	}
	return r, nil
}

// WithDefaults is the route with its optional fields filled, as the
// router routes by it.
func (r Route) WithDefaults() Route { return r.withDefaults() }

// Quoted is s as an error may repeat it: printable, and cut to a bound.
func Quoted(s string) string { return printable(s, maxQuoted) }

// printable is s printable, cut to at most n bytes of it.
func printable(s string, n int) string {
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return event.Printable(s)
}
