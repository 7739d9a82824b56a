package router

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Kind names the step's kind: send, wait, throttle, digest or window.
func (s Step) Kind() string {
	switch {
	case s.Send != nil:
		return "send"
	case s.Wait != nil:
		return "wait"
	case s.Throttle != nil:
		return "throttle"
	case s.Digest != nil:
		return "digest"
	case s.Window != nil:
		return "window"
	}
	return ""
}

// Describe writes the step as a person reads it ("wait 24h or
// order.confirmed"), for the API, the CLI and the console alike.
func (s Step) Describe() string {
	switch {
	case s.Send != nil:
		return s.Send.describe()
	case s.Wait != nil:
		return s.Wait.describe()
	case s.Throttle != nil:
		return fmt.Sprintf("throttle %d per %s by %s", max(s.Throttle.Limit, 1), s.Throttle.Per.short(), s.Throttle.Key)
	case s.Digest != nil:
		return s.Digest.describe()
	case s.Window != nil:
		return s.Window.describe()
	}
	return ""
}

func (s SendStep) describe() string {
	var parts []string
	for _, c := range s.Channels {
		parts = append(parts, string(c))
	}
	text := strings.TrimSpace("send " + strings.Join(parts, ", "))
	if len(s.Fallback) > 0 {
		var fb []string
		for _, c := range s.Fallback {
			fb = append(fb, string(c))
		}
		text += ", else " + strings.Join(fb, ", ")
	}
	if len(s.Roles) > 0 {
		text += " to " + strings.Join(s.Roles, ", ")
	}
	if s.Template != "" {
		text += " (" + s.Template + ")"
	}
	return strings.TrimSpace(text)
}

func (w WaitStep) describe() string {
	var bounds []string
	if w.For > 0 {
		bounds = append(bounds, w.For.short())
	}
	if w.Until != "" {
		bounds = append(bounds, "until "+w.Until)
	}
	if w.UntilEvent != "" {
		bounds = append(bounds, w.UntilEvent)
	}
	if w.UntilStatus != "" {
		bounds = append(bounds, "until "+w.UntilStatus)
	}
	return "wait " + strings.Join(bounds, " or ")
}

func (d DigestStep) describe() string {
	text := "digest by " + d.Key
	if d.Window > 0 {
		text += " for " + d.Window.short()
	}
	if d.Cron != "" {
		text += " at " + d.Cron
		if d.Timezone != "" {
			text += " (" + d.Timezone + ")"
		}
	}
	if d.MaxItems > 0 {
		text += fmt.Sprintf(", at most %d", d.MaxItems)
	}
	return text
}

func (w WindowStep) describe() string {
	text := "window " + w.From + "–" + w.To
	if len(w.Days) > 0 {
		text += " " + strings.Join(w.Days, ", ")
	}
	text += " (" + cmp.Or(w.Timezone, "recipient") + " time)"
	if w.UnlessPriority != "" {
		text += " unless " + string(w.UnlessPriority)
	}
	return text
}

// short writes the span as config is written: 24h, 2d, 1m30s — not Go's
// 24h0m0s. Whole days from two on are days.
func (d Duration) short() string {
	t := time.Duration(d)
	if t >= 48*time.Hour && t%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", t/(24*time.Hour))
	}
	s := t.String()
	for _, unit := range []string{"m0s", "h0m"} {
		s = strings.Replace(s, unit, unit[:1], 1)
	}
	return s
}
