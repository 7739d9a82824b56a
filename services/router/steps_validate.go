package router

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/robfig/cron/v3"
	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/recipient"
)

// The bounds of a workflow. A run and its waits live in KV_runs and RUNS,
// which keep 90 days: a wait of at most 60 leaves a run time to finish
// its other steps before its state is forgotten. A throttle's counter and
// a digest's items are kept at most 30 days. The rest bound what one
// tenant's workflow costs every event it matches.
const (
	maxSteps     = 20
	maxKeyBytes  = 256
	maxWait      = Duration(60 * 24 * time.Hour)
	maxPeriod    = Duration(30 * 24 * time.Hour)
	maxListItems = 16
)

// stepKinds are a step's keys, in the order Step declares them.
var stepKinds = []string{"send", "wait", "throttle", "digest", "window"}

// weekdays are the days a window may name.
var weekdays = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

// cronParser reads five-field crons only: no seconds, no descriptors
// (@daily), so a cron means the same in the file and on the scheduler.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// UnmarshalYAML refuses a step that is not exactly one of send, wait,
// throttle, digest or window, and a key its kind does not have: the
// file's strict decoding (KnownFields) does not reach inside a type that
// decodes itself, so a misspelt key would otherwise silently be dropped.
func (s *Step) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a step is a mapping with one of %s", n.Line, strings.Join(stepKinds, ", "))
	}
	var kinds []string
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if !slices.Contains(stepKinds, k.Value) {
			return fmt.Errorf("line %d: %q is not a step (want one of %s)", k.Line, event.Printable(k.Value), strings.Join(stepKinds, ", "))
		}
		kinds = append(kinds, k.Value)
	}
	if len(kinds) != 1 {
		return fmt.Errorf("line %d: %s", n.Line, oneKind(kinds))
	}
	type plain Step // without this method, so Decode does not recurse
	var p plain
	if err := checkStepKeys(kinds[0], n.Content[1]); err != nil {
		return err
	}
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = Step(p)
	return nil
}

// checkStepKeys refuses a key the step's kind does not declare.
func checkStepKeys(kind string, body *yaml.Node) error {
	if body.Kind != yaml.MappingNode {
		return nil // null or a scalar: Decode reports the scalar; validate an empty kind
	}
	f, _ := reflect.TypeFor[Step]().FieldByNameFunc(func(name string) bool { return strings.EqualFold(name, kind) })
	known := yamlKeys(f.Type.Elem())
	for i := 0; i < len(body.Content); i += 2 {
		if k := body.Content[i]; !slices.Contains(known, k.Value) {
			return fmt.Errorf("line %d: %s has no key %q (want some of %s)", k.Line, kind, event.Printable(k.Value), strings.Join(known, ", "))
		}
	}
	return nil
}

// yamlKeys are the YAML keys of a struct's fields.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		keys = append(keys, name)
	}
	return keys
}

// stepsWithDefaults fills the steps' optional fields, on copies: the
// caller's steps stay as given.
func stepsWithDefaults(steps []Step) []Step {
	if steps == nil {
		return nil
	}
	steps = slices.Clone(steps)
	for i, s := range steps {
		if s.Send != nil && s.Send.Roles != nil {
			send := *s.Send
			send.Roles = recipient.NormalizeRoles(send.Roles)
			steps[i].Send = &send
		}
		if s.Throttle != nil && s.Throttle.Limit == 0 {
			throttle := *s.Throttle
			throttle.Limit = 1
			steps[i].Throttle = &throttle
		}
	}
	return steps
}

// oneKind says what is wrong with a step of these kinds, not one.
func oneKind(kinds []string) string {
	got := "none"
	if len(kinds) > 0 {
		got = strings.Join(kinds, " and ")
	}
	return fmt.Sprintf("a step is exactly one of %s (got %s)", strings.Join(stepKinds, ", "), got)
}

// kinds are the kinds set on a step.
func (s Step) kinds() []string {
	var out []string
	for i, set := range []bool{s.Send != nil, s.Wait != nil, s.Throttle != nil, s.Digest != nil, s.Window != nil} {
		if set {
			out = append(out, stepKinds[i])
		}
	}
	return out
}

// problems collects a workflow's problems, each prefixed with its field.
type problems struct {
	out []string
}

func (p *problems) add(field, format string, args ...any) {
	p.out = append(p.out, fmt.Sprintf("%s: %s", field, fmt.Sprintf(format, args...)))
}

// validateWorkflow returns the problems of the route's steps and cancel_on,
// each naming route, step index and field.
func (r Route) validateWorkflow(field string) []string {
	p := &problems{}
	r.checkCancelOn(p, field+".cancel_on")
	if len(r.Steps) == 0 {
		return p.out
	}
	if len(r.Steps) > maxSteps {
		p.add(field+".steps", "%d steps; a workflow has at most %d", len(r.Steps), maxSteps)
		return p.out
	}
	sends := 0
	for j, s := range r.Steps {
		f := fmt.Sprintf("%s.steps[%d]", field, j)
		kinds := s.kinds()
		if len(kinds) != 1 {
			p.add(f, "%s", oneKind(kinds))
			continue
		}
		f += "." + kinds[0]
		if !checkSizes(p, f, s) {
			continue
		}
		switch {
		case s.Send != nil:
			sends++
			r.checkSend(p, f, *s.Send)
		case s.Wait != nil:
			r.checkWait(p, f, j, *s.Wait, sends > 0)
		case s.Throttle != nil:
			checkThrottle(p, f, *s.Throttle)
		case s.Digest != nil:
			checkDigest(p, f, *s.Digest, time.Now())
		case s.Window != nil:
			checkWindow(p, f, *s.Window)
		}
	}
	if sends == 0 {
		p.add(field+".steps", "a workflow needs at least one send")
	}
	return p.out
}

// checkSizes refuses a step with a list of more than maxListItems or a
// string of more than maxKeyBytes, before any check repeats it or
// compares its items pairwise: what a workflow costs to check, and the
// size of its problems, stay bounded whoever wrote it.
func checkSizes(p *problems, f string, s Step) bool {
	v := reflect.ValueOf(s)
	for i := range v.NumField() {
		if !v.Field(i).IsNil() {
			v = v.Field(i).Elem()
			break
		}
	}
	return checkFieldSizes(p, f, v)
}

// checkFieldSizes refuses, in struct v, a list of strings of more than
// maxListItems, or a string of more than maxKeyBytes or holding a control
// character, each named f.<its key>. Other fields are left to their checks.
func checkFieldSizes(p *problems, f string, v reflect.Value) bool {
	ok := true
	for i := range v.NumField() {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		field := v.Field(i)
		if field.Kind() == reflect.Slice && field.Type().Elem().Kind() == reflect.String && field.Len() > maxListItems {
			p.add(f+"."+name, "%d items; at most %d", field.Len(), maxListItems)
			ok = false
			continue
		}
		for _, s := range stringsOf(field) {
			if len(s) > maxKeyBytes {
				p.add(f+"."+name, "%d bytes; at most %d", len(s), maxKeyBytes)
				ok = false
				break
			}
			if err := event.CheckText(s); err != nil {
				p.add(f+"."+name, "%v", err)
				ok = false
				break
			}
		}
	}
	return ok
}

// stringsOf is a string field's value, or a list of strings' items.
func stringsOf(v reflect.Value) []string {
	switch {
	case v.Kind() == reflect.String:
		return []string{v.String()}
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		out := make([]string, v.Len())
		for i := range out {
			out[i] = v.Index(i).String()
		}
		return out
	}
	return nil
}

// checkCancelOn: the events that end a route's runs are events of the
// same order, other than the one that starts them.
func (r Route) checkCancelOn(p *problems, f string) {
	if len(r.CancelOn) > 0 && len(r.Steps) == 0 {
		p.add(f, "ends a route's runs, and a route without steps has none: it sends at once")
	}
	if len(r.CancelOn) > maxListItems || slices.ContainsFunc(r.CancelOn, func(e string) bool { return len(e) > maxKeyBytes }) {
		p.add(f, "%d events; at most %d, each of at most %d bytes", len(r.CancelOn), maxListItems, maxKeyBytes)
		return
	}
	for i, e := range r.CancelOn {
		if slices.Contains(r.CancelOn[:i], e) {
			p.add(f, "%q is named twice", event.Printable(e))
			continue
		}
		r.checkOrderEvent(p, f, e)
	}
}

// checkOrderEvent: an event that ends a wait or a run is found by its
// order, so it and the route's own event are order events, and not the
// same one (the event that starts a run would end it at once).
func (r Route) checkOrderEvent(p *problems, f, e string) {
	family, _, _ := strings.Cut(e, ".")
	routeFamily, _, _ := strings.Cut(r.Event, ".")
	switch _, err := event.Subject(e); {
	case err != nil:
		p.add(f, "%v", err)
	case family != "order":
		p.add(f, "%q: only order events end a run, matched by their order (want order.*)", event.Printable(e))
	case routeFamily != "order":
		p.add(f, "%q: only a route of order events has an order for it to match (the route's event is %q)", e, r.Event)
	case e == r.Event:
		p.add(f, "%q is the route's own event: it would end the run it starts", e)
	}
}

// checkSend checks a send's channels as the route's are, and that it has
// some: its own or the route's.
func (r Route) checkSend(p *problems, f string, s SendStep) {
	if len(s.Channels) == 0 && len(s.Fallback) == 0 && len(r.Channels) == 0 && len(r.Fallback) == 0 {
		p.add(f+".channels", "at least one channel or a fallback is required when the route has none (want some of %v)", event.Channels)
	}
	all := slices.Concat(s.Channels, s.Fallback)
	for i, c := range all {
		field := f + ".channels"
		if i >= len(s.Channels) {
			field = f + ".fallback"
		}
		switch {
		case !slices.Contains(event.Channels, c):
			p.add(field, "%q is not a channel (want some of %v)", event.Printable(string(c)), event.Channels)
		case slices.Contains(all[:i], c):
			p.add(field, "%q is named twice: a recipient hears once per channel", c)
		}
	}
	if s.Template != "" && !templatePattern.MatchString(s.Template) {
		p.add(f+".template", "%q must be 1-64 lowercase letters, digits or '_'", event.Printable(s.Template))
	}
	if err := recipient.CheckRoles(s.Roles); err != nil {
		p.add(f+".roles", "%v", err)
	}
}

// checkWait: a wait ends — after a time, at a time, or on an event.
func (r Route) checkWait(p *problems, f string, step int, w WaitStep, sentBefore bool) {
	if w.For == 0 && w.Until == "" && w.UntilEvent == "" {
		p.add(f, "needs a bound: for, until or until_event")
	}
	if w.For < 0 || w.For > maxWait {
		p.add(f+".for", "%v must be more than 0 and at most 60 days (runs are kept 90)", time.Duration(w.For))
	}
	if w.Until != "" {
		checkUntil(p, f+".until", w.Until)
	}
	if w.UntilEvent != "" {
		r.checkOrderEvent(p, f+".until_event", w.UntilEvent)
	}
	switch w.UntilStatus {
	case "":
	case "delivered":
		if !sentBefore {
			p.add(f+".until_status", "no send before this wait whose notification could be delivered")
		}
	case "read":
		r.checkRead(p, f+".until_status", step)
	default:
		p.add(f+".until_status", "%q must be delivered or read", event.Printable(w.UntilStatus))
	}
}

// checkRead: only an inbox item is read (its subscriber marks it), so a
// wait until_status: read follows a send that may write one — inbox among
// its channels or its fallback. Otherwise the wait could only time out.
func (r Route) checkRead(p *problems, f string, wait int) {
	send := r.StatusSend(wait)
	if send < 0 {
		p.add(f, "no send before this wait whose notification could be read")
		return
	}
	sr := r.stepRoute(send)
	if !slices.Contains(slices.Concat(sr.Channels, sr.Fallback), event.ChannelInbox) {
		p.add(f, "read needs the send it follows (steps[%d]) to be on channel inbox", send)
	}
}

// checkUntil: a template over the event's data, or an RFC 3339 time.
func checkUntil(p *problems, f, until string) {
	if strings.Contains(until, "{{") {
		if err := checkKeyTemplate(until); err != nil {
			p.add(f, "%v", err)
		}
		return
	}
	if _, err := time.Parse(time.RFC3339, until); err != nil {
		p.add(f, "%q is neither an RFC 3339 time (2026-01-02T15:04:05Z) nor a template ({{.Order.DueDate}})", event.Printable(until))
	}
}

// checkKeyTemplate refuses a template that holds a control character or
// does not parse (checkSizes has bounded its length).
func checkKeyTemplate(t string) error {
	if err := event.CheckText(t); err != nil {
		return err
	}
	if _, err := template.New("key").Parse(t); err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	return nil
}

func checkThrottle(p *problems, f string, t ThrottleStep) {
	checkKey(p, f+".key", t.Key)
	if t.Limit < 1 {
		p.add(f+".limit", "%d must be 1 or more", t.Limit)
	}
	checkPeriod(p, f+".per", t.Per)
}

// checkKey: a throttle's or digest's key is a template, required.
func checkKey(p *problems, f, key string) {
	if key == "" {
		p.add(f, "is required: a template over the event's data, such as {{.Stock.SKU}}")
		return
	}
	if err := checkKeyTemplate(key); err != nil {
		p.add(f, "%v", err)
	}
}

// checkPeriod: more than nothing, and within what is kept.
func checkPeriod(p *problems, f string, d Duration) {
	if d <= 0 || d > maxPeriod {
		p.add(f, "%v must be more than 0 and at most 30 days", time.Duration(d))
	}
}

// checkDigest: a digest closes after a window or at a cron's times that
// come, never both.
func checkDigest(p *problems, f string, d DigestStep, now time.Time) {
	checkKey(p, f+".key", d.Key)
	switch {
	case d.Window == 0 && d.Cron == "":
		p.add(f, "needs a window or a cron to close")
	case d.Window != 0 && d.Cron != "":
		p.add(f, "has both a window and a cron: give one")
	case d.Cron != "":
		checkCron(p, f+".cron", d.Cron, now)
	default:
		checkPeriod(p, f+".window", d.Window)
	}
	if d.MaxItems < 0 || d.MaxItems > MaxDigestItems {
		p.add(f+".max_items", "%d must be between 0 (the most, 1,000) and %d", d.MaxItems, MaxDigestItems)
	}
	switch {
	case d.Timezone != "" && d.Cron == "":
		p.add(f+".timezone", "applies to a cron; a window is a duration in any zone")
	default:
		checkTimezone(p, f+".timezone", d.Timezone)
	}
}

// MaxDigestItems bounds a digest: its items travel in one notification.
// A digest that gathers more sends them in several.
const MaxDigestItems = 1000

// NextCron is when a digest's cron (five fields, checked at start-up)
// next fires after t, in t's time zone: across a change of the clocks as
// the local clock reads.
func NextCron(spec string, t time.Time) (time.Time, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return time.Time{}, fmt.Errorf("cron %q: %w", spec, err)
	}
	next := s.Next(t)
	if next.IsZero() {
		return time.Time{}, fmt.Errorf("cron %q never fires", spec)
	}
	return next, nil
}

// checkCron: five fields that parse and fire some day.
func checkCron(p *problems, f, spec string, now time.Time) {
	if len(strings.Fields(spec)) != 5 {
		p.add(f, "%q must be five fields: minute hour day-of-month month day-of-week, such as \"0 8 * * *\"", event.Printable(spec))
		return
	}
	if err := event.CheckText(spec); err != nil {
		p.add(f, "%v", err) // the parser's errors would repeat the character
		return
	}
	s, err := cronParser.Parse(spec)
	if err != nil {
		p.add(f, "%q does not parse: %v", spec, err)
		return
	}
	if s.Next(now).IsZero() {
		p.add(f, "%q never fires", spec)
	}
}

// checkTimezone: empty, the recipient's, or an IANA name.
func checkTimezone(p *problems, f, tz string) {
	if tz == "" || tz == "recipient" {
		return
	}
	if err := recipient.CheckTimezone(tz); err != nil {
		p.add(f, "%v, or recipient", err)
	}
}

// checkWindow: days of the week, and a local time it opens and closes.
func checkWindow(p *problems, f string, w WindowStep) {
	for i, d := range w.Days {
		switch {
		case !slices.Contains(weekdays, d):
			p.add(f+".days", "%q is not a day (want some of %s)", event.Printable(d), strings.Join(weekdays, ", "))
		case slices.Contains(w.Days[:i], d):
			p.add(f+".days", "%q is named twice", d)
		}
	}
	from, fromOK := clockTime(p, f+".from", w.From)
	to, toOK := clockTime(p, f+".to", w.To)
	if fromOK && toOK && from == to {
		p.add(f+".to", "%q is when the window opens too: it would never be open (to before from spans midnight)", w.To)
	}
	checkTimezone(p, f+".timezone", w.Timezone)
	if w.UnlessPriority != "" && !slices.Contains(notification.Priorities, w.UnlessPriority) {
		p.add(f+".unless_priority", "%q is not a priority (want one of %v)", event.Printable(string(w.UnlessPriority)), notification.Priorities)
	}
}

// clockTime reads HH:MM or HH:MM:SS as a time since midnight.
func clockTime(p *problems, f, s string) (time.Duration, bool) {
	for _, layout := range []string{"15:04", "15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second, true
		}
	}
	p.add(f, "%q must be a local time HH:MM or HH:MM:SS, such as 08:00", event.Printable(s))
	return 0, false
}
