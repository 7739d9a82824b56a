package push

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/heraldhq/herald/shared/notification"
	"github.com/heraldhq/herald/shared/provider"
	"github.com/heraldhq/herald/shared/recipient"
)

// outcome is one device's answer.
type outcome struct {
	device recipient.Device
	err    error
	// removed says a gone device was removed; removeErr why it was not.
	removed   bool
	removeErr error
}

// fanOut sends to every device at once, at most MaxConcurrent at a time,
// and tells the protocol what came of it: delivered when any device took
// it, each device's outcome in the note (or, when none did, the error).
func (c *Channel) fanOut(ctx context.Context, d notification.Delivery, subscriber string, sends []send) (provider.Receipt, error) {
	senders, err := c.senders(ctx, d.Tenant, sends)
	if err != nil {
		return provider.Receipt{}, err
	}
	outcomes := make([]outcome, len(sends))
	slots := make(chan struct{}, c.cfg.MaxConcurrent)
	var wg sync.WaitGroup
	for i, s := range sends {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			outcomes[i] = c.sendOne(ctx, d.Tenant, subscriber, senders[s.device.Kind], s)
		})
	}
	wg.Wait()
	return settle(d, outcomes)
}

// sendOne sends to one device through its kind's sender, and removes it when its service says it is
// gone: a later notification should not try it again.
func (c *Channel) sendOne(ctx context.Context, tenant, subscriber string, sender choice, s send) outcome {
	o := outcome{device: s.device}
	switch {
	case sender.err != nil:
		o.err = sender.err
		return o
	case sender.sender.Sender == nil:
		o.err = provider.Permanentf("no provider for %s", s.device.Kind)
		return o
	}
	_, o.err = sender.sender.Sender.Send(ctx, s.msg)
	if !IsGone(o.err) {
		return o
	}
	if o.removeErr = c.cfg.Devices.RemoveDevice(ctx, tenant, subscriber, s.device.ID); o.removeErr == nil {
		o.removed = true
	} else {
		c.cfg.Logger.WarnContext(ctx, "could not remove a gone push device; the next notification tries it again",
			"tenant", tenant, "subscriber", subscriber, "device", s.device.ID, "error", o.removeErr)
	}
	return o
}

// settle is the call's answer: a receipt noting every device's outcome
// when one took the message; otherwise permanent when no try could change
// any device's answer, else transient, waiting for the longest
// Retry-After and ambiguous when any device may have taken it.
func settle(d notification.Delivery, outcomes []outcome) (provider.Receipt, error) {
	note := describe(outcomes)
	var errs []error
	gone := 0
	for _, o := range outcomes {
		if o.err == nil {
			return provider.Receipt{MessageID: d.ID, Note: note}, nil
		}
		errs = append(errs, o.err)
		if IsGone(o.err) {
			gone++
		}
	}
	all := errors.Join(errs...)
	switch {
	case gone == len(outcomes):
		return provider.Receipt{}, provider.Permanentf("every device is gone: %s", note)
	case allPermanent(errs):
		return provider.Receipt{}, provider.Permanentf("no device took the notification: %s", note)
	}
	return provider.Receipt{}, &provider.TransientError{Err: fmt.Errorf("no device took the notification: %s", note),
		RetryAfter: provider.RetryAfter(all), Ambiguous: provider.IsAmbiguous(all)}
}

func allPermanent(errs []error) bool {
	for _, err := range errs {
		if !provider.IsPermanent(err) {
			return false
		}
	}
	return true
}

// describe is each device's outcome, by its kind and id: never its token
// or endpoint, which are capabilities, and the ledger is shown in history.
func describe(outcomes []outcome) string {
	parts := make([]string, len(outcomes))
	for i, o := range outcomes {
		name := string(o.device.Kind) + ":" + o.device.ID
		switch {
		case o.err == nil:
			parts[i] = name + " accepted"
		case o.removed:
			parts[i] = name + " gone (removed)"
		case o.removeErr != nil:
			parts[i] = name + " gone (not removed: " + o.removeErr.Error() + ")"
		default:
			parts[i] = name + " failed: " + o.err.Error()
		}
	}
	return strings.Join(parts, "; ")
}
