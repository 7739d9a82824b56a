// Package alert turns dead letters into alerts for people. A burst of ten
// thousand failures becomes a handful of messages with counts and the top
// reasons, not ten thousand messages.
//
// The DLQ service hands every new entry to an [Aggregator], which sends a
// [Summary] to each [Sender]: [Slack] for a chat channel (Slack, Mattermost,
// Rocket.Chat, Discord's /slack endpoint), [Webhook] for anything that reads
// JSON, or your own.
//
//	agg := alert.New(alert.Config{
//		Senders: []alert.Sender{alert.Slack{URL: cfg.SlackURL}},
//		Logger:  logger,
//	})
//	go agg.Run(ctx) // returns once ctx ends and pending failures are flushed
//	agg.Add(alert.Failure{Stream: "NOTIFY", Consumer: "email-normal", Reason: reason})
//
// The service also hands it the monthly quota thresholds tenants reach
// (80 % and 100 % of a channel's quota) with [Aggregator.AddQuota]: they
// share the failures' windows and summaries, so a month's end that takes
// many tenants over their quotas makes a handful of alerts too.
//
// # How many alerts
//
// The first failure (or quota threshold) after a quiet period is alerted at once: nobody should
// wait a window to learn that something broke. Then the window starts, and
// failures are counted until it ends; if any came, one summary goes out and
// a new window starts, otherwise the burst is over. So alerts are always at
// least a Window apart, and every alert but the first carries a failure added
// after the alert before it. For N failures over a burst lasting D, that
// makes at most 1 + ceil(D/Window) alerts, plus one when Run stops and
// flushes what is pending, whatever N is.
//
// # Reasons
//
// Reasons are free text that embed request ids, numbers, quoted values and
// addresses, so counting them verbatim would give every failure its own line.
// [ReasonClass] reduces a reason to its class, and summaries count classes.
//
// # Secrets
//
// A Slack incoming-webhook URL is a credential: anyone holding it can post to
// the channel. So are many webhook URLs. Errors and logs name "the slack
// webhook" or "the webhook", never the URL.
package alert
