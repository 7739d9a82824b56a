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
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	entry := nats.NewMsg(Subject(md.Stream, md.Consumer))
	entry.Data = msg.Data()
	for k, vs := range msg.Headers() {
		if k == jetstream.MsgIDHeader || strings.HasPrefix(k, "Nats-Expected-") {
			continue
		}
		entry.Header[k] = vs
	}
	if id := msg.Headers().Get(jetstream.MsgIDHeader); id != "" {
		entry.Header.Set(HeaderMsgID, id)
	}
	entry.Header.Set(HeaderStream, md.Stream)
	entry.Header.Set(HeaderConsumer, md.Consumer)
	entry.Header.Set(HeaderSubject, msg.Subject())
	entry.Header.Set(HeaderSequence, strconv.FormatUint(md.Sequence.Stream, 10))
	entry.Header.Set(HeaderDeliveries, strconv.FormatUint(md.NumDelivered, 10))
	entry.Header.Set(HeaderReason, clean(reason, 1024))
	entry.Header.Set(HeaderTime, time.Now().UTC().Format(time.RFC3339Nano))
	entry.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("dlq:%s:%d", md.Stream, md.Sequence.Stream))
	if _, err := js.PublishMsg(ctx, entry); err != nil {
		return fmt.Errorf("dead letter: writing to %s: %w", entry.Subject, err)
	}
	return nil
}

// clean makes a reason fit a header: one line, bounded length.
func clean(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit-3], "") + "..."
	}
	return s
}
