package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"go.opentelemetry.io/otel/trace"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/telemetry"
)

func publishCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publish FILE",
		Short: "Publish an event file to NATS_URL, with Nats-Msg-Id from its tenant, id and bytes",
		Long: `Publish a CloudEvents JSON file on the subject its type implies
(order.created → orders.created, inventory.low_stock → inventory.low_stock),
with Nats-Msg-Id <tenant>:<id>:<digest of the file>, so publishing it again
is a duplicate. It is checked first as the router checks it, and refused
with the reason the router would dead-letter it with.

With --count N, publish N distinct copies: each gets a derived event id
(<id>-000001…) and, for orders, a derived order id, so each copy is a new
order that notifies its recipients. A progress bar shows the acknowledgements.

With --binary, publish in CloudEvents binary content mode, as SDKs do by
default: the attributes as ce- headers, datacontenttype as content-type,
the data as the body.`,
		Args: cobra.ExactArgs(1),
		RunE: runPublish,
	}
	cmd.Flags().Int("count", 1, "publish this many distinct copies")
	cmd.Flags().String("subject", "", "publish on this subject instead of the one the type implies")
	cmd.Flags().Bool("no-validate", false, "publish even if the event is invalid (to try dead-lettering)")
	cmd.Flags().Bool("binary", false, "publish in CloudEvents binary content mode (attributes as ce- headers, the data as the body)")
	return cmd
}

func runPublish(cmd *cobra.Command, args []string) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	count, _ := cmd.Flags().GetInt("count")
	subject, _ := cmd.Flags().GetString("subject")
	noValidate, _ := cmd.Flags().GetBool("no-validate")
	binary, _ := cmd.Flags().GetBool("binary")
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	// The router's own check, envelope and data: what it would dead-letter
	// is refused here with the reason it would give.
	ev, _, err := event.Read(raw)
	if err != nil && !noValidate {
		return fmt.Errorf("%s: %w (use --no-validate to publish it anyway)", args[0], err)
	}
	if subject == "" {
		if subject, err = event.Subject(ev.Type); err != nil {
			return fmt.Errorf("%s: %w (use --subject)", args[0], err)
		}
	}
	if count < 1 {
		return fmt.Errorf("--count must be 1 or more")
	}
	js, closeNATS, err := connectJetStream(cfg.NATS.URL)
	if err != nil {
		return err
	}
	defer closeNATS()
	if count == 1 {
		msg, err := eventMsg(subject, ev.Tenant, ev.ID, raw, binary)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return publishOne(cmd, cfg, js, msg, ev.ID)
	}
	return publishCopies(cmd, js, subject, raw, count, binary)
}

// eventMsg is the message that carries an event, in structured mode or, if
// binary, in binary content mode, with Nats-Msg-Id event.MsgID when it has
// an id: the digest is of the structured bytes, so the same file published
// in either mode is one message.
func eventMsg(subject, tenant, id string, raw []byte, binary bool) (*nats.Msg, error) {
	msg := nats.NewMsg(subject)
	msg.Data = raw
	if binary {
		header, body, err := event.Binary(raw)
		if err != nil {
			return nil, fmt.Errorf("--binary: %w", err)
		}
		maps.Copy(msg.Header, header)
		msg.Data = body
	}
	if id != "" {
		msg.Header.Set(jetstream.MsgIDHeader, event.MsgID(tenant, id, raw))
	}
	return msg, nil
}

// publishOne publishes one event. When the OTEL_* variables ask for traces,
// the trace starts here, and its id is printed.
func publishOne(cmd *cobra.Command, cfg app.Config, js jetstream.JetStream, msg *nats.Msg, id string) error {
	subject := msg.Subject
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	if telemetry.TracingEnabled(cfg.Getenv) {
		tp, err := telemetry.NewTracerProvider(ctx, "herald-publish", cfg.Getenv)
		if err != nil {
			return err
		}
		defer func() { _ = tp.Shutdown(context.WithoutCancel(ctx)) }()
		var span trace.Span
		ctx, span = tp.Tracer(telemetry.Scope).Start(ctx, "herald publish")
		defer span.End()
		fmt.Fprintf(cmd.OutOrStdout(), "trace %s\n", span.SpanContext().TraceID())
	}
	ack, err := telemetry.PublishMsg(ctx, js, msg)
	if err != nil {
		return fmt.Errorf("publishing to %s: %w", subject, err)
	}
	if ack.Duplicate {
		fmt.Fprintf(cmd.OutOrStdout(), "duplicate: %s was already published to %s (stream %s ignored it)\n", id, subject, ack.Stream)
		return nil
	}
	if id == "" {
		id = "an event without an id (so without Nats-Msg-Id)"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "published %s to %s (stream %s, sequence %d)\n", id, subject, ack.Stream, ack.Sequence)
	return nil
}

func publishCopies(cmd *cobra.Command, js jetstream.JetStream, subject string, raw []byte, count int, binary bool) error {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("--count needs a JSON object to derive copies from: %w", err)
	}
	bar := progressbar.NewOptions(count,
		progressbar.OptionSetDescription("publishing"),
		progressbar.OptionSetWriter(cmd.ErrOrStderr()),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionFullWidth())
	start := time.Now()
	var duplicates int
	// A window of async publishes: fast, yet bounded in memory.
	const window = 256
	pending := make(chan jetstream.PubAckFuture, window)
	done := make(chan error, 1)
	go func() {
		for f := range pending {
			select {
			case ack := <-f.Ok():
				if ack.Duplicate {
					duplicates++
				}
				_ = bar.Add(1)
			case err := <-f.Err():
				done <- fmt.Errorf("publishing %s: %w", f.Msg().Header.Get(jetstream.MsgIDHeader), err)
				for range pending {
				}
				return
			}
		}
		done <- nil
	}()
	tenant, _ := doc["tenant"].(string) // a copy's is the original's
	for i := 1; i <= count; i++ {
		id, body, err := deriveCopy(doc, i)
		if err != nil {
			close(pending)
			return err
		}
		msg, err := eventMsg(subject, tenant, id, body, binary)
		if err != nil {
			close(pending)
			<-done
			return err
		}
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			close(pending)
			<-done
			return fmt.Errorf("publishing %s: %w", id, err)
		}
		pending <- f
	}
	close(pending)
	if err := <-done; err != nil {
		return err
	}
	_ = bar.Finish()
	elapsed := time.Since(start)
	fmt.Fprintf(cmd.OutOrStdout(), "\npublished %d events to %s in %s (%.0f/s), %d duplicates\n",
		count, subject, elapsed.Round(time.Millisecond), float64(count)/elapsed.Seconds(), duplicates)
	return nil
}

// deriveCopy returns copy n of an event: id <id>-<n>, and for orders
// order id <order id>-<n>, so each copy is a distinct notification.
func deriveCopy(doc map[string]any, n int) (string, []byte, error) {
	suffix := fmt.Sprintf("-%06d", n)
	cp := maps.Clone(doc)
	id := fmt.Sprint(doc["id"]) + suffix
	cp["id"] = id
	if data, ok := doc["data"].(map[string]any); ok {
		if order, ok := data["order"].(map[string]any); ok {
			o := maps.Clone(order)
			o["id"] = fmt.Sprint(order["id"]) + suffix
			d := maps.Clone(data)
			d["order"] = o
			cp["data"] = d
		}
	}
	body, err := json.Marshal(cp)
	return id, body, err
}
