// Package deadletter gives up on a message without losing it: it copies the
// message to the DLQ stream on dlq.<stream>.<consumer>, then terminates it
// with the reason. The copy comes first because AckTerm deletes a message
// from a work-queue stream.
//
// An entry's body is the original payload, byte for byte; its headers are the
// original headers plus Herald-* headers saying where it came from and why it
// failed, so `nats stream view DLQ` shows everything an operator needs.
//
// An entry must fit the connection's max_payload, and the headers it adds
// can push an original that fitted over it. Such a payload is kept in the
// object store bucket dlq_payloads instead (see payload.go), and the entry,
// with an empty body, names the object. The original headers an entry copies
// are bounded too, so that what a publisher sent cannot stop its own dead
// letter from being written.
package deadletter

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
	"github.com/heraldhq/herald/streams"
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
	// HeaderDroppedHeaders counts the original headers left out to bound
	// the entry's size; set only when some were.
	HeaderDroppedHeaders = "Herald-Dropped-Headers"
)

// ErrRefused is returned, wrapped, when the server refuses an entry for
// good (larger than it takes): retrying the same copy cannot succeed.
var ErrRefused = errors.New("the DLQ refuses the entry")

const (
	// maxCopiedHeaders bounds the original headers an entry keeps.
	maxCopiedHeaders = 16 << 10
	// publishHeadroom is what a traced publish may add to an entry's
	// headers: traceparent, tracestate (≤ 512 B) and baggage (≤ 8 KiB).
	publishHeadroom = 9 << 10
)

// Subject is where entries from one stream's consumer are written.
func Subject(stream, consumer string) string {
	return "dlq." + stream + "." + consumer
}

// Terminate writes msg to the DLQ with reason, waits for the DLQ stream to
// store it, and only then terminates msg. If the copy fails, msg is left
// unsettled for redelivery and the error is returned.
func Terminate(ctx context.Context, js jetstream.JetStream, msg jetstream.Msg, reason string) error {
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
func Write(ctx context.Context, js jetstream.JetStream, msg jetstream.Msg, reason string) error {
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
func Copy(ctx context.Context, js jetstream.JetStream, stream, consumer string, m *jetstream.RawStreamMsg, deliveries uint64, reason string) error {
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

func write(ctx context.Context, js jetstream.JetStream, e Entry) error {
	// A fair loop's per-tenant consumer files under the durable it was
	// made from: dlq.<stream>.<durable>, the tenant in the header.
	e.Consumer, _ = streams.DurableOf(e.Consumer)
	entry := e.message()
	if Size(entry)+publishHeadroom > js.Conn().MaxPayload() {
		if err := keepPayload(ctx, js, e, entry); err != nil {
			return err
		}
	}
	_, err := telemetry.PublishMsg(ctx, js, entry)
	if errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, jetstream.ErrStreamMessageExceedsMaximum) {
		return fmt.Errorf("dead letter: writing to %s: %w: %w", entry.Subject, ErrRefused, err)
	}
	if err != nil {
		return fmt.Errorf("dead letter: writing to %s: %w", entry.Subject, err)
	}
	return nil
}

// message is the entry as published, its body the original payload.
func (e Entry) message() *nats.Msg {
	entry := nats.NewMsg(Subject(e.Stream, e.Consumer))
	entry.Data = e.Data
	if dropped := copyHeaders(entry.Header, e.Header); dropped > 0 {
		entry.Header.Set(HeaderDroppedHeaders, strconv.Itoa(dropped))
	}
	// The id is kept as sent (operators search by it); only an absurd one
	// is cut, to bound the entry.
	if id := e.Header.Get(jetstream.MsgIDHeader); len(id) > 1024 {
		entry.Header.Set(HeaderMsgID, clean(id, 1024))
	} else if id != "" {
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
	return entry
}

// copyHeaders copies the original headers an entry keeps into dst, the
// smallest first while they fit in maxCopiedHeaders — so the most are
// kept, and what goes is the one huge header — and returns how many it
// left out.
func copyHeaders(dst, src nats.Header) (dropped int) {
	keys := make([]string, 0, len(src))
	for k := range src {
		// Nats-* headers are instructions to (or stamps from) the server —
		// an id, expectations, a rollup, a direct get's Nats-Subject — and
		// must not act on, or be mistaken for, the dead letter itself.
		// Herald-* headers are the entry's own: a publisher's must not
		// pass for them (a forged Herald-Payload-Object would point at
		// another entry's payload).
		if hasPrefixFold(k, "Nats-") || hasPrefixFold(k, "Herald-") {
			continue
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(headerSize(a, src[a]), headerSize(b, src[b])), strings.Compare(a, b))
	})
	budget := maxCopiedHeaders
	for _, k := range keys {
		n := headerSize(k, src[k])
		if n > budget {
			dropped++
			continue
		}
		budget -= n
		dst[k] = src[k]
	}
	return dropped
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Size is how much of the server's max_payload msg takes: its body and its
// headers as the client encodes them ("NATS/1.0\r\n", one "Key: value\r\n"
// per value, a closing "\r\n").
func Size(msg *nats.Msg) int64 {
	n := len(msg.Data)
	if len(msg.Header) > 0 {
		n += len("NATS/1.0\r\n") + len("\r\n")
		for k, vs := range msg.Header {
			n += headerSize(k, vs)
		}
	}
	return int64(n)
}

func headerSize(key string, values []string) int {
	n := 0
	for _, v := range values {
		n += len(key) + len(": ") + len(v) + len("\r\n")
	}
	return n
}

// tenantOf reads the top-level "tenant" every Herald message carries
// (events, deliveries, render requests), when the payload is JSON at all.
// A payload that names a tenant twice, or under another casing, files its
// entry under no tenant: it is exactly the ambiguity the router refuses, and
// guessing would file it under the tenant an attacker chose.
func tenantOf(data []byte) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	tenant, named := "", 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return ""
		}
		if k, _ := key.(string); strings.EqualFold(k, "tenant") {
			named++
			if k != "tenant" || json.Unmarshal(value, &tenant) != nil {
				return ""
			}
		}
	}
	if named != 1 || !event.ValidTenant(tenant) {
		return ""
	}
	return tenant
}

// clean makes a reason fit a header: one line, bounded length.
func clean(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit-3], "") + "..."
	}
	return s
}
