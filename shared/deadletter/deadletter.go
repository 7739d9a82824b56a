// Package deadletter gives up on a message without losing it: it copies the
// message to the DLQ stream on dlq.<stream>.<consumer>, then terminates it
// with the reason. The copy comes first because AckTerm deletes a message
// from a work-queue stream.
//
// An entry's body is the original payload, byte for byte; its headers are the
// original headers plus Herald-* headers saying where it came from and why it
// failed, so `nats stream view DLQ` shows everything an operator needs.
package deadletter

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
)

// Headers set on every entry.
const (
	HeaderStream     = "Herald-Stream"
	HeaderConsumer   = "Herald-Consumer"
	HeaderSubject    = "Herald-Subject"
	HeaderSequence   = "Herald-Sequence"
	HeaderDeliveries = "Herald-Deliveries"
	HeaderReason     = "Herald-Reason"
	HeaderTime       = "Herald-Time"
	HeaderMsgID      = "Herald-Original-Msg-Id"
	HeaderTenant     = "Herald-Tenant"
)

// Subject is where entries from one stream's consumer are written.
func Subject(stream, consumer string) string {
	return "dlq." + stream + "." + consumer
}

// Terminate writes msg to the DLQ with reason, waits for the DLQ stream to
// store it, and only then terminates msg. If the copy fails, msg is left
// unsettled for redelivery and the error is returned.
func Terminate(ctx context.Context, js jetstream.Publisher, msg jetstream.Msg, reason string) error {
	if err := Write(ctx, js, msg, reason); err != nil {
		return err
	}
	if err := msg.TermWithReason(clean(reason, 256)); err != nil {
		return fmt.Errorf("dead letter: copied, but terminating failed: %w", err)
	}
	return nil
}

// Write copies msg to the DLQ. The entry's Nats-Msg-Id is derived from the
// original's stream and sequence, so writing the same message twice within
// the DLQ's duplicate window stores one entry.
func Write(ctx context.Context, js jetstream.Publisher, msg jetstream.Msg, reason string) error {
	md, err := msg.Metadata()
	if err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	return write(ctx, js, Entry{
		Stream: md.Stream, Consumer: md.Consumer, Subject: msg.Subject(), Sequence: md.Sequence.Stream,
		Deliveries: md.NumDelivered, Reason: reason, Header: msg.Headers(), Data: msg.Data(),
	})
}

// Copy writes a message read back from stream by sequence — one that
// exhausted its deliveries to consumer — to the DLQ. Traced, the copy joins
// the trace of the message it keeps, linked to the span that found it
// (handling the server's advisory).
func Copy(ctx context.Context, js jetstream.Publisher, stream, consumer string, m *jetstream.RawStreamMsg, deliveries uint64, reason string) error {
	if original := trace.SpanContextFromContext(telemetry.Propagator.Extract(context.Background(), telemetry.Header(m.Header))); original.IsValid() {
		found := trace.SpanFromContext(ctx)
		var span trace.Span
		ctx, span = found.TracerProvider().Tracer(telemetry.Scope).Start(trace.ContextWithRemoteSpanContext(ctx, original),
			"dead-letter "+stream+" > "+consumer, trace.WithLinks(trace.Link{SpanContext: found.SpanContext()}))
		defer span.End()
	}
	return write(ctx, js, Entry{
		Stream: stream, Consumer: consumer, Subject: m.Subject, Sequence: m.Sequence,
		Deliveries: deliveries, Reason: reason, Header: m.Header, Data: m.Data,
	})
}

// Entry is what a dead letter records about the message it keeps.
type Entry struct {
	Stream, Consumer, Subject string
	Sequence, Deliveries      uint64
	Reason                    string
	Header                    nats.Header
	Data                      []byte
}

func write(ctx context.Context, js jetstream.Publisher, e Entry) error {
	entry := nats.NewMsg(Subject(e.Stream, e.Consumer))
	entry.Data = e.Data
	for k, vs := range e.Header {
		// Nats-* headers are instructions to (or stamps from) the server —
		// an id, expectations, a rollup, a direct get's Nats-Subject — and
		// must not act on, or be mistaken for, the dead letter itself.
		if strings.HasPrefix(k, "Nats-") {
			continue
		}
		entry.Header[k] = vs
	}
	if id := e.Header.Get(jetstream.MsgIDHeader); id != "" {
		entry.Header.Set(HeaderMsgID, id)
	}
	entry.Header.Set(HeaderStream, e.Stream)
	entry.Header.Set(HeaderConsumer, e.Consumer)
	entry.Header.Set(HeaderSubject, e.Subject)
	entry.Header.Set(HeaderSequence, strconv.FormatUint(e.Sequence, 10))
	entry.Header.Set(HeaderDeliveries, strconv.FormatUint(e.Deliveries, 10))
	entry.Header.Set(HeaderReason, clean(e.Reason, 1024))
	entry.Header.Set(HeaderTime, time.Now().UTC().Format(time.RFC3339Nano))
	if tenant := tenantOf(e.Data); tenant != "" {
		entry.Header.Set(HeaderTenant, tenant)
	}
	entry.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dlq:%s:%d", e.Stream, e.Sequence))
	if _, err := telemetry.PublishMsg(ctx, js, entry); err != nil {
		return fmt.Errorf("dead letter: writing to %s: %w", entry.Subject, err)
	}
	return nil
}

// tenantOf reads the top-level "tenant" every Herald message carries
// (events, deliveries, render requests), when the payload is JSON at all.
func tenantOf(data []byte) string {
	var m struct {
		Tenant string `json:"tenant"`
	}
	if json.Unmarshal(data, &m) != nil || !event.ValidTenant(m.Tenant) {
		return ""
	}
	return m.Tenant
}

// clean makes a reason fit a header: one line, bounded length.
func clean(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit-3], "") + "..."
	}
	return s
}
