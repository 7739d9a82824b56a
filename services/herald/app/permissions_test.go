package app_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/outbox"
	"github.com/heraldhq/herald/services/delivery/email/ses/sestest"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/delivery/sms/twilio/twiliotest"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/apikey"
	"github.com/heraldhq/herald/shared/deadletter"
	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/event"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/preferencepage"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/streams"
)

// jsCommon is what every Herald service asks the JetStream API: whether
// the declared streams exist (readiness), and their state.
var jsCommon = []string{"$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.*"}

// kvReadWrite is what reading, listing and writing a bucket takes.
func kvReadWrite(bucket string) []string {
	return []string{"$KV." + bucket + ".>", "$JS.API.DIRECT.GET.KV_" + bucket + ".>", "$JS.API.CONSUMER.CREATE.KV_" + bucket + ".>",
		"$JS.API.CONSUMER.DELETE.KV_" + bucket + ".>", "$JS.FC.KV_" + bucket + ".>"}
}

// consume is what reading a durable consumer takes: its info, the next
// messages, and the acknowledgements.
func consume(stream, durable string) []string {
	return []string{
		"$JS.API.CONSUMER.INFO." + stream + "." + durable,
		"$JS.API.CONSUMER.MSG.NEXT." + stream + "." + durable,
		"$JS.ACK." + stream + "." + durable + ".>",
	}
}

// readDocuments and writeDocuments are the object store "documents": its
// metadata is read with direct gets (every stream allows them), its chunks
// through an ordered consumer; writing a name again purges its old chunks.
// ledger is the key-value bucket "deliveries" and its retry index,
// "delivery_retries", which the sweep watches. dlqPayloads is where a
// service that dead-letters a message too large for its entry keeps the
// payload.
var (
	readDocuments = []string{
		"$JS.API.DIRECT.GET.OBJ_documents.>", "$JS.API.CONSUMER.CREATE.OBJ_documents.>", "$JS.API.CONSUMER.DELETE.OBJ_documents.>",
		"$JS.FC.OBJ_documents.>",
	}
	// readTenants is the tenant registry, which the router and delivery
	// follow through a watch: flow control included, without which a
	// large registry stalls it (shared/tenant's permissions test).
	readTenants = []string{
		"$JS.API.CONSUMER.CREATE.KV_tenants.>", "$JS.API.CONSUMER.DELETE.KV_tenants.>", "$JS.FC.KV_tenants.>",
	}
	writeDocuments = []string{"$O.documents.>", "$JS.API.STREAM.PURGE.OBJ_documents"}
	ledger         = []string{"$KV.deliveries.>", "$JS.API.DIRECT.GET.KV_deliveries.>",
		"$KV.delivery_retries.>", "$JS.API.DIRECT.GET.KV_delivery_retries.>"}
	webhookEndpoints = []string{"$KV.webhook_endpoints.>", "$JS.API.DIRECT.GET.KV_webhook_endpoints.>"}
	dlqPayloads      = []string{"$O.dlq_payloads.>", "$JS.API.DIRECT.GET.OBJ_dlq_payloads.>", "$JS.API.STREAM.PURGE.OBJ_dlq_payloads"}
	// The monthly usage counters: counted by the delivery workers (a
	// counter's total is read back by direct get after a duplicate), read
	// by the api.
	countQuotas = []string{"quota.>", "$JS.API.DIRECT.GET.QUOTAS", "$JS.API.DIRECT.GET.QUOTAS.>"}
	// The addresses each tenant must not be sent to, followed through a
	// watch by the channels that send to addresses.
	// The tenants' own email templates, followed through a watch by the
	// email workers.
	readTemplates = []string{"$JS.API.CONSUMER.CREATE.KV_templates.>", "$JS.API.CONSUMER.DELETE.KV_templates.>", "$JS.FC.KV_templates.>"}
	// The tenants' sending domains, followed through a watch by the email
	// workers, which send from verified ones only.
	readDomains      = []string{"$JS.API.CONSUMER.CREATE.KV_sending_domains.>", "$JS.API.CONSUMER.DELETE.KV_sending_domains.>", "$JS.FC.KV_sending_domains.>"}
	readSuppressions = []string{"$JS.API.CONSUMER.CREATE.KV_suppressions.>", "$JS.API.CONSUMER.DELETE.KV_suppressions.>",
		"$JS.FC.KV_suppressions.>"}
	// The subscribers' preferences, followed through a watch by every
	// channel's workers, which hold back what a subscriber switched off.
	readPreferences = []string{"$JS.API.CONSUMER.CREATE.KV_preferences.>", "$JS.API.CONSUMER.DELETE.KV_preferences.>",
		"$JS.FC.KV_preferences.>"}
	readQuotas = []string{"$JS.API.DIRECT.GET.QUOTAS.>"}
	// Erasing a subscriber: the directory's buckets read (their keys and
	// kept revisions through ordered consumers) and purged, the erasure
	// recorded on the audit stream (and the devices bucket, whose PUTs and
	// listings are the api's too). The same consumers follow them by
	// watch for the api's planner (router.Planner).
	eraseSubscribers = join(kvReadWrite("subscribers"), kvReadWrite("accounts"), kvReadWrite("topic_members"), kvReadWrite("devices"),
		kvReadWrite("preferences"), []string{"audit.erasure"})
	// Each tenant's webhook redeliveries an hour, counted by the api.
	countRedeliveries = []string{"quota.*.redelivered.*"}
	// Each delivery process's circuit breakers, for the console.
	shareCircuits = []string{"$KV.circuits.>"}
	// The workflow runs told that a notification their send made was
	// delivered (a wait's until_status), by every channel's workers.
	tellRuns = []string{"runs.in.*"}
	// The webhook endpoints, followed by the webhook workers for the
	// disablings not yet told to their tenants.
	watchWebhookEndpoints = []string{"$JS.API.CONSUMER.CREATE.KV_webhook_endpoints.>", "$JS.API.CONSUMER.DELETE.KV_webhook_endpoints.>",
		"$JS.FC.KV_webhook_endpoints.>"}
)

// servicePermissions are the least each Herald service needs, as README.md
// ("NATS permissions") and the chart's README give them. Every service
// receives its replies, fetched messages and acknowledgements on _INBOX.>.
var servicePermissions = map[string][]string{
	"router": join(jsCommon, consume("ORDERS", "router"), consume("INVENTORY", "router"), dlqPayloads, readTenants,
		[]string{"docs.render.*.*", "notify.*.*.*", "notify.accepted.*", "dlq.ORDERS.router", "dlq.INVENTORY.router",
			// The events it routed, by tenant and id.
			"$KV.events.>", "$JS.API.DIRECT.GET.KV_events.>",
			// The recipients events name, followed by watch; a subscriber
			// or an account the watch has not delivered yet is read.
			"$JS.API.CONSUMER.CREATE.KV_subscribers.>", "$JS.API.CONSUMER.DELETE.KV_subscribers.>", "$JS.FC.KV_subscribers.>",
			"$JS.API.CONSUMER.CREATE.KV_accounts.>", "$JS.API.CONSUMER.DELETE.KV_accounts.>", "$JS.FC.KV_accounts.>",
			"$JS.API.CONSUMER.CREATE.KV_topic_members.>", "$JS.API.CONSUMER.DELETE.KV_topic_members.>", "$JS.FC.KV_topic_members.>",
			"$JS.API.CONSUMER.CREATE.KV_preferences.>", "$JS.API.CONSUMER.DELETE.KV_preferences.>", "$JS.FC.KV_preferences.>",
			// Who has a push device, followed by watch: push is planned
			// only for them.
			"$JS.API.CONSUMER.CREATE.KV_devices.>", "$JS.API.CONSUMER.DELETE.KV_devices.>", "$JS.FC.KV_devices.>",
			"$JS.API.DIRECT.GET.KV_subscribers.>", "$JS.API.DIRECT.GET.KV_accounts.>",
			// A large topic's pages, asked for and planned per tenant in
			// turn (it also subscribes to fanout.*: wakes).
			"fanout.*", "$JS.API.CONSUMER.CREATE.FANOUT.>", "$JS.API.CONSUMER.MSG.NEXT.FANOUT.*", "$JS.ACK.FANOUT.>",
			"$JS.API.CONSUMER.INFO.FANOUT.*", "$JS.API.CONSUMER.DELETE.FANOUT.*", // its slots given up (fairSlots)
			"dlq.FANOUT.router-fanout",
			// The tenants' own workflows, followed by watch.
			"$JS.API.CONSUMER.CREATE.KV_workflows.>", "$JS.API.CONSUMER.DELETE.KV_workflows.>", "$JS.FC.KV_workflows.>",
			// Workflow runs: started, told of their order's events, and
			// their send steps planned per tenant in turn.
			"runs.in.*", "$JS.API.CONSUMER.CREATE.RUNS.*.runs.send.>", "$JS.API.CONSUMER.MSG.NEXT.RUNS.*", "$JS.ACK.RUNS.>",
			"$JS.API.CONSUMER.INFO.RUNS.*", "$JS.API.CONSUMER.DELETE.RUNS.*", "dlq.RUNS.router-runs"}),
	// The workflow service takes the runs' messages per tenant in turn,
	// keeps each run in KV_runs (an order's runs listed by key), asks the
	// router for their sends, schedules their waits and purges a wait's
	// schedule when an event ends it; gathers digests and flushes them.
	"workflow": join(jsCommon, kvReadWrite("runs"), dlqPayloads, []string{
		"$JS.API.CONSUMER.CREATE.RUNS.*.runs.in.>", "$JS.API.CONSUMER.CREATE.RUNS.*.runs.wake.>", "$JS.API.CONSUMER.MSG.NEXT.RUNS.*", "$JS.ACK.RUNS.>",
		"$JS.API.CONSUMER.INFO.RUNS.*", "$JS.API.CONSUMER.DELETE.RUNS.*", "runs.send.*", "runs.timer.*.*.*", "$JS.API.STREAM.PURGE.RUNS", "dlq.RUNS.workflow",
		// A window's time zone, the subscriber's; a throttle's counters.
		"$JS.API.DIRECT.GET.KV_subscribers.>", "throttle.*.*.*", "$JS.API.DIRECT.GET.THROTTLES", "$JS.API.DIRECT.GET.THROTTLES.>",
		// A digest's items and its flush schedule, read back by its flush.
		"runs.digest.*.*", "runs.flush.*.*", "$JS.API.DIRECT.GET.RUNS", "$JS.API.DIRECT.GET.RUNS.>"}),
	"pdf": join(jsCommon, consume("DOCS", "pdf"), readDocuments, writeDocuments, dlqPayloads,
		[]string{"notify.*.*.*", "notify.status.*", "dlq.DOCS.pdf"}),
	"delivery": join(jsCommon, consume("NOTIFY", "email-critical"), consume("NOTIFY", "email-normal"),
		consume("NOTIFY", "email-low"), readDocuments, ledger, dlqPayloads, readTenants, countQuotas, readSuppressions, readPreferences, readTemplates, readDomains, shareCircuits, tellRuns,
		[]string{"notify.status.*", "dlq.NOTIFY.*"}),
	"sms": join(jsCommon, consume("NOTIFY", "sms-critical"), consume("NOTIFY", "sms-normal"),
		consume("NOTIFY", "sms-low"), ledger, dlqPayloads, readTenants, countQuotas, readSuppressions, readPreferences, shareCircuits, tellRuns, []string{"notify.status.*", "dlq.NOTIFY.*"}),
	"whatsapp": join(jsCommon, consume("NOTIFY", "whatsapp-critical"), consume("NOTIFY", "whatsapp-normal"),
		consume("NOTIFY", "whatsapp-low"), ledger, dlqPayloads, readTenants, countQuotas, readSuppressions, readPreferences, shareCircuits, tellRuns, []string{"notify.status.*", "dlq.NOTIFY.*"}),
	// The push channel: the subscribers' devices read (listed through an
	// ordered consumer, each read by direct get, after recipient.Open has
	// bound every recipient bucket), and a device its push service says
	// is gone deleted. The protocol follows the suppressions as for every
	// channel but webhooks.
	"push": join(jsCommon, consume("NOTIFY", "push-critical"), consume("NOTIFY", "push-normal"),
		consume("NOTIFY", "push-low"), ledger, dlqPayloads, readTenants, countQuotas, readSuppressions, readPreferences, shareCircuits, tellRuns,
		kvReadWrite("devices"), []string{"notify.status.*", "dlq.NOTIFY.*"}),
	// The inbox channel: each subscriber's feed in the inbox bucket, its
	// index read and written (and listed, by the retention sweep), and the
	// contents of items the feed's cap or retention drops purged by
	// subject.
	"inbox": join(jsCommon, consume("NOTIFY", "inbox-critical"), consume("NOTIFY", "inbox-normal"),
		consume("NOTIFY", "inbox-low"), ledger, dlqPayloads, readTenants, countQuotas, readSuppressions, readPreferences, shareCircuits, tellRuns,
		kvReadWrite("inbox"), []string{"$JS.API.STREAM.PURGE.KV_inbox", "notify.status.*", "dlq.NOTIFY.*"}),
	// The webhook channel and its status feed: the endpoints' registry
	// (read, and written to record an endpoint's health; followed by watch
	// for disablings not yet told), outcomes (the ledger's writes) and the
	// tenants' other events in, webhooks out.
	"webhook": join(jsCommon, consume("NOTIFY", "webhook-critical"), consume("NOTIFY", "webhook-normal"),
		consume("NOTIFY", "webhook-low"), consume("KV_deliveries", "webhooks"), consume("STATUS", "webhooks"), ledger, dlqPayloads, readTenants,
		webhookEndpoints, watchWebhookEndpoints, countQuotas, readPreferences, shareCircuits, tellRuns,
		[]string{"notify.status.*", "notify.webhook.*.*", "notify.accepted.*", "dlq.NOTIFY.*", "dlq.KV_deliveries.webhooks", "dlq.STATUS.webhooks"}),
	// The dead letters and the tenants' quota thresholds, alerted together.
	"dlq": join(jsCommon, consume("ADVISORIES", "dlq"), consume("DLQ", "alerts"), consume("STATUS", "alerts"), ledger, dlqPayloads,
		// The original of a dead letter, from any stream; copies to the
		// DLQ; the sweep watches its index (once, after an upgrade, lists
		// the ledger) and resends to NOTIFY.
		[]string{"$JS.API.DIRECT.GET.>", "dlq.*.*", "notify.*.*.*",
			"$JS.API.CONSUMER.CREATE.KV_deliveries.>", "$JS.API.CONSUMER.DELETE.KV_deliveries.>",
			"$JS.API.CONSUMER.CREATE.KV_delivery_retries.>", "$JS.API.CONSUMER.DELETE.KV_delivery_retries.>",
			"$JS.FC.KV_deliveries.>", "$JS.FC.KV_delivery_retries.>"}),
	// The history service reads the ledger's changes and the accepted
	// records, and the providers' reports, which it joins to their
	// notifications: kept in the ledger, told on notify.status.<tenant>,
	// suppressing the address on a hard bounce or complaint; and the
	// subscribers' changes, for the subscriber index. Its retention
	// sweep follows the tenants' retention, lists and removes documents,
	// reads each tenant's last accepted record, to know the index has
	// taken it, and purges a tenant's old messages from the streams whose
	// subjects name it: the first one young enough, by direct get, and
	// the consumers, which must have taken them first.
	"history": join(jsCommon, consume("KV_deliveries", "history"), consume("STATUS", "history"), consume("REPORTS", "history"),
		consume("KV_subscribers", "history"), dlqPayloads, ledger, readTenants, readDocuments, writeDocuments, []string{"$KV.suppressions.>", "notify.status.*",
			"dlq.KV_deliveries.history", "dlq.STATUS.history", "dlq.REPORTS.history", "dlq.KV_subscribers.history", "$JS.API.DIRECT.GET.STATUS.notify.accepted.*",
			"$JS.API.DIRECT.GET.ORDERS", "$JS.API.DIRECT.GET.INVENTORY", "$JS.API.DIRECT.GET.STATUS",
			"$JS.API.CONSUMER.LIST.ORDERS", "$JS.API.CONSUMER.LIST.INVENTORY", "$JS.API.CONSUMER.LIST.STATUS",
			"$JS.API.STREAM.PURGE.ORDERS", "$JS.API.STREAM.PURGE.INVENTORY", "$JS.API.STREAM.PURGE.STATUS"}),
	// The outbox relay publishes events as a trusted publisher, on the
	// subjects its services' rows name.
	"outbox-relay": join(jsCommon, []string{"orders.*", "inventory.*", "orders.*.*", "inventory.*.*"}),
	// The HTTP API publishes events as a trusted publisher, sends the
	// notifications its callers write (recording them as accepted), keeps
	// each Idempotency-Key's answer, reads notifications from the ledger (and
	// resends a failed one), follows the API keys, recording when each was
	// last used; for admin keys it manages tenants, keys and providers, and
	// reads and redrives dead letters to their original subjects.
	"api": join(jsCommon, ledger, readTenants, dlqPayloads, webhookEndpoints, readQuotas, countRedeliveries, eraseSubscribers,
		// The workflow runs, read, listed and cancelled (a waiting
		// step's timer purged).
		kvReadWrite("runs"), []string{"$JS.API.STREAM.PURGE.RUNS"},
		// The subscribers' inbox feeds: read, marked (a read item tells
		// its workflow run), the items a feed drops or an erasure removes
		// purged, and followed from new writes by an ordered consumer for
		// the browsers' streams.
		kvReadWrite("inbox"), []string{"$JS.API.CONSUMER.MSG.NEXT.KV_inbox.*", "$JS.API.STREAM.PURGE.KV_inbox", "runs.in.*"},
		// The tenants' own workflows: written, read, listed, and followed
		// by watch for the planner.
		kvReadWrite("workflows"), []string{"orders.*", "inventory.*",
			// Providers' reports, once their signature is verified.
			"notify.reports.*",
			"orders.*.*", "inventory.*.*", "docs.render.*", "docs.render.*.*", "notify.*.*.*", "notify.accepted.*",
			"$KV.idempotency.>", "$JS.API.DIRECT.GET.KV_idempotency.>",
			// The plans it runs with, published when it starts.
			"$KV.plans.>",
			"$KV.api_keys.>", "$JS.API.DIRECT.GET.KV_api_keys.>", "$JS.API.CONSUMER.CREATE.KV_api_keys.>",
			"$JS.API.CONSUMER.DELETE.KV_api_keys.>", "$JS.FC.KV_api_keys.>",
			"$KV.tenants.>", "$JS.API.DIRECT.GET.KV_tenants.>",
			"$KV.credentials.>", "$JS.API.DIRECT.GET.KV_credentials.>", "$JS.API.CONSUMER.CREATE.KV_credentials.>",
			"$JS.API.CONSUMER.DELETE.KV_credentials.>", "$JS.FC.KV_credentials.>",
			"$JS.API.DIRECT.GET.DLQ", "$JS.API.CONSUMER.CREATE.DLQ.>", "$JS.API.CONSUMER.DELETE.DLQ.>", "$JS.API.CONSUMER.MSG.NEXT.DLQ.*", "$JS.FC.DLQ.>",
			"$JS.API.CONSUMER.CREATE.OBJ_dlq_payloads.>", "$JS.API.CONSUMER.DELETE.OBJ_dlq_payloads.>", "$JS.FC.OBJ_dlq_payloads.>",
			"$KV.dlq_redrives.>", "$JS.API.DIRECT.GET.KV_dlq_redrives.>",
			// The preference page: the subscriber read, their preferences read
			// and written.
			"$JS.API.DIRECT.GET.KV_subscribers.>", "$KV.preferences.>", "$JS.API.DIRECT.GET.KV_preferences.>",
			// The tenants' suppressed addresses, listed through an ordered
			// consumer (ListKeysFiltered).
			"$KV.suppressions.>", "$JS.API.DIRECT.GET.KV_suppressions.>", "$JS.API.CONSUMER.CREATE.KV_suppressions.>",
			"$JS.API.CONSUMER.DELETE.KV_suppressions.>", "$JS.FC.KV_suppressions.>",
			// The tenants' sending domains, listed the same way.
			"$KV.sending_domains.>", "$JS.API.DIRECT.GET.KV_sending_domains.>", "$JS.API.CONSUMER.CREATE.KV_sending_domains.>",
			"$JS.API.CONSUMER.DELETE.KV_sending_domains.>", "$JS.FC.KV_sending_domains.>",
			// The tenants' own templates, checked, stored and listed.
			"$KV.templates.>", "$JS.API.DIRECT.GET.KV_templates.>", "$JS.API.CONSUMER.CREATE.KV_templates.>",
			"$JS.API.CONSUMER.DELETE.KV_templates.>", "$JS.FC.KV_templates.>",
			// The tenants' subscribers, accounts, topics, topic memberships
			// and preferences: written, read, listed (ListKeysFiltered), a
			// topic's memberships removed together.
			"$KV.subscribers.>", "$JS.API.DIRECT.GET.KV_subscribers.>", "$JS.API.CONSUMER.CREATE.KV_subscribers.>",
			"$JS.API.CONSUMER.DELETE.KV_subscribers.>", "$JS.FC.KV_subscribers.>",
			"$KV.accounts.>", "$JS.API.DIRECT.GET.KV_accounts.>", "$JS.API.CONSUMER.CREATE.KV_accounts.>",
			"$JS.API.CONSUMER.DELETE.KV_accounts.>", "$JS.FC.KV_accounts.>",
			"$KV.topics.>", "$JS.API.DIRECT.GET.KV_topics.>", "$JS.API.CONSUMER.CREATE.KV_topics.>",
			"$JS.API.CONSUMER.DELETE.KV_topics.>", "$JS.FC.KV_topics.>",
			"$KV.topic_members.>", "$JS.API.DIRECT.GET.KV_topic_members.>", "$JS.API.CONSUMER.CREATE.KV_topic_members.>",
			"$JS.API.CONSUMER.DELETE.KV_topic_members.>", "$JS.FC.KV_topic_members.>",
			"$KV.preferences.>", "$JS.API.DIRECT.GET.KV_preferences.>",
			// A webhook redelivery's range, read from the tenant's outcomes:
			// the ledger's writes.
			"$JS.API.CONSUMER.CREATE.KV_deliveries.>", "$JS.API.CONSUMER.DELETE.KV_deliveries.>",
			"$JS.API.CONSUMER.MSG.NEXT.KV_deliveries.*", "$JS.FC.KV_deliveries.>",
			// The console: its sessions, its audit log, and the streams'
			// and consumers' state for the flow and the drift.
			"$KV.console_sessions.>", "$JS.API.DIRECT.GET.KV_console_sessions.>", "audit.console",
			"$JS.API.STREAM.LIST", "$JS.API.CONSUMER.LIST.*", "$JS.API.CONSUMER.NAMES.*", "$JS.API.CONSUMER.INFO.*.*",
			"$JS.API.DIRECT.GET.KV_circuits.>", "$JS.API.CONSUMER.CREATE.KV_circuits.>", "$JS.API.CONSUMER.DELETE.KV_circuits.>", "$JS.FC.KV_circuits.>"}),
}

func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

const publisherInbox = "_INBOX_orders"

// natsUsers are the users of the permissions test: one per service, an
// administrator that applies the streams, and a publisher that may only
// publish events (and read the stream's acknowledgements on an inbox of
// its own, so it cannot read other clients' replies).
func natsUsers(fair bool) func(*server.Options) {
	return func(opts *server.Options) { addUsers(opts, fair) }
}

func addUsers(opts *server.Options, fair bool) {
	opts.Users = []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "publisher", Password: "publisher", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"orders.*", "inventory.*"}},
			Subscribe: &server.SubjectPermission{Allow: []string{publisherInbox + ".>"}},
		}},
	}
	for name, allow := range servicePermissions {
		subscribe := []string{"_INBOX.>"}
		if channel, ok := fairChannels[name]; ok && fair {
			publish, sub := fairPermissions(channel)
			allow, subscribe = append(slices.Clone(allow), publish...), append(subscribe, sub...)
		}
		subscribe = append(subscribe, wakes[name]...)
		if name == "pdf" && fair {
			allow, subscribe = append(slices.Clone(allow), fairRenders[0]...), append(subscribe, fairRenders[1]...)
		}
		opts.Users = append(opts.Users, &server.User{Username: name, Password: name, Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: allow},
			Subscribe: &server.SubjectPermission{Allow: subscribe},
		}})
	}
}

// violations collects the server's permission violations.
type violations struct {
	mu    sync.Mutex
	lines []string
}

func (v *violations) Enabled(context.Context, slog.Level) bool { return true }
func (v *violations) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "Violation") {
		v.mu.Lock()
		v.lines = append(v.lines, r.Message)
		v.mu.Unlock()
	}
	return nil
}
func (v *violations) WithAttrs([]slog.Attr) slog.Handler { return v }
func (v *violations) WithGroup(string) slog.Handler      { return v }
func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.lines...)
}

// The permissions README.md documents are enough: each service runs as its
// own NATS user with only those, an order goes through to its emails — one
// published on NATS, one through the HTTP API, one through the outbox
// relay — as does a notification
// written through the API, each recorded as accepted on the way, and an
// invalid order goes to the DLQ, and no service was denied anything. A publisher with its
// permissions can publish events and nothing else.
//
// With scheduling.fair, the delivery services make a consumer per tenant,
// and remove the shared durables streams apply made before: the extra
// permissions README.md gives for that mode are enough too.
func TestPipelineRunsWithTheDocumentedNATSPermissions(t *testing.T) {
	t.Parallel()
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			t.Parallel()
			runWithPermissions(t, fair)
		})
	}
}

// digestingRoutes are the default routes, the low-stock alert's a
// workflow that gathers a warehouse's alerts for a second.
func digestingRoutes() []router.Route {
	routes := router.DefaultRoutes()
	for i, r := range routes {
		if r.Event == "inventory.low_stock" {
			routes[i].Channels = []event.Channel{event.ChannelSMS}
			routes[i].Steps = []router.Step{{Digest: &router.DigestStep{Key: "{{.Stock.Warehouse}}", Window: router.Duration(time.Second)}},
				{Send: &router.SendStep{}}}
		}
	}
	return routes
}

// wakes are where new messages wake a service's loops served per tenant:
// the router's fan-out pages and runs' sends, the workflow's runs.
var wakes = map[string][]string{"router": {"fanout.*", "runs.send.*"}, "workflow": {"runs.in.*", "runs.wake.*"}}

// fairChannels are the delivery services' channels, by NATS user.
var fairChannels = map[string]string{"delivery": "email", "sms": "sms", "whatsapp": "whatsapp", "webhook": "webhook", "push": "push", "inbox": "inbox"}

// fairRenders is what the renderer needs beyond its durable's under
// scheduling.fair: its consumers per tenant (and per document type, for
// requests from before the tenant token), the durable removed once, and
// new requests heard.
var fairRenders = [2][]string{
	append([]string{"$JS.API.CONSUMER.CREATE.DOCS.>", "$JS.API.CONSUMER.MSG.NEXT.DOCS.*", "$JS.ACK.DOCS.>"}, fairSlots("DOCS")...),
	{"docs.render.*.*", "docs.render.*"},
}

// fairSlots is what a fair loop's giving up a key's consumer takes (a
// key idle for its Idle, or whose slot another waits for): its info, to
// see nothing is unsettled, then its removal — and, once, the FIFO
// durables'. A consumer's name is one token (<class>_<key>), so the
// wildcard cannot be narrowed to a class.
func fairSlots(stream string) []string {
	return []string{"$JS.API.CONSUMER.INFO." + stream + ".*", "$JS.API.CONSUMER.DELETE." + stream + ".*"}
}

// fairPermissions are what a delivery service needs beyond its durables'
// under scheduling.fair: to make (and, once, remove the FIFO durables of)
// its channel's consumers per tenant, pull from them, and hear of new
// deliveries on its channel's subjects.
func fairPermissions(channel string) (publish, subscribe []string) {
	publish = append([]string{"$JS.API.CONSUMER.CREATE.NOTIFY.*.notify." + channel + ".>", "$JS.API.CONSUMER.MSG.NEXT.NOTIFY.*", "$JS.ACK.NOTIFY.>"},
		fairSlots("NOTIFY")...)
	return publish, []string{"notify." + channel + ".*.*"}
}

func runWithPermissions(t *testing.T, fair bool) {
	denied := &violations{}
	srv, err := embedded.StartNATS(embedded.NATSConfig{StoreDir: heraldtest.StoreDir(t), Options: natsUsers(fair), Logger: slog.New(denied)})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	as := func(user string) string {
		return strings.Replace(srv.URL(), "nats://", "nats://"+user+":"+user+"@", 1)
	}
	// The whole pipeline starts here, service by service: on a loaded CI
	// machine that takes longer than heraldtest.Context's half minute.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	admin, err := nats.Connect(as("admin"))
	require.NoError(t, err)
	t.Cleanup(admin.Close)
	adminJS, err := jetstream.New(admin)
	require.NoError(t, err)
	report, err := streams.Apply(ctx, adminJS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	heraldtest.RegisterTenants(t, adminJS, "acme")
	// With a payload retention of its own, the history service's sweep
	// lists the documents and reads acme's last accepted record.
	registry, err := tenant.Open(ctx, adminJS, tenant.BuiltinPlans())
	require.NoError(t, err)
	_, err = registry.Update(ctx, "acme", func(x *tenant.Tenant) error { return tenant.SetRetention(&x.Retention, "payloads=1d") })
	require.NoError(t, err)

	keys, err := apikey.Open(ctx, adminJS)
	require.NoError(t, err)
	apiKey, _, err := keys.Create(ctx, apikey.Spec{Tenant: "acme", Scopes: []apikey.Scope{apikey.Send, apikey.Read}})
	require.NoError(t, err)
	adminKey, _, err := keys.Create(ctx, apikey.Spec{Admin: true})
	require.NoError(t, err)
	masterKey := filepath.Join(t.TempDir(), "master.key")
	_, err = vault.GenerateKeyFile(masterKey)
	require.NoError(t, err)

	mailDir, textDir := t.TempDir(), t.TempDir()
	redisURL, prefix := heraldtest.RedisURL(t), heraldtest.Prefix()
	client := heraldtest.HTTPClient(t)
	apps := map[string]*app.App{}
	historyDB := "sqlite:" + filepath.Join(t.TempDir(), "history.db")
	outboxDB := "sqlite:" + filepath.Join(t.TempDir(), "outbox.db")
	outboxTable, err := outbox.Open(ctx, outboxDB)
	require.NoError(t, err)
	require.NoError(t, outboxTable.Init(ctx))
	outboxTable.Close()
	ses := sestest.New(t)
	fcm := fcmtest.New(t)
	for _, name := range app.Targets {
		var cfg app.Config
		cfg.NATS.URL, cfg.Redis.URL, cfg.Redis.Prefix = as(name), redisURL, prefix
		cfg.HTTP.Listen, cfg.API.Listen = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Streams.SkipApply = true
		cfg.Scheduling.Fair = &fair
		cfg.Services = []string{name}
		cfg.Email.From = "Herald <herald@example.com>"
		cfg.Email.Providers = []app.ProviderConfig{{Type: "maildir", Dir: mailDir}}
		cfg.SMS.Providers = []app.ProviderConfig{{Type: "textdir", Dir: textDir}}
		cfg.WhatsApp.Providers = cfg.SMS.Providers
		cfg.Router.Routes = digestingRoutes()
		cfg.Vault.MasterKeyFile = masterKey
		if name == "history" || name == "api" {
			cfg.History.URL = historyDB
		}
		if name == "outbox-relay" {
			cfg.Outbox.URL = outboxDB
		}
		if name == "push" {
			cfg.Push.FCM = &app.FCMConfig{CredentialsEnv: "FCM_CREDENTIALS", ProjectID: fcmtest.Project, Endpoint: fcm.Endpoint()}
			cfg.Getenv = func(k string) string {
				return map[string]string{"FCM_CREDENTIALS": string(fcm.ServiceAccountJSON())}[k]
			}
		}
		if name == "api" {
			// The api verifies Twilio's callbacks with the platform
			// account's token, and registers sending domains with SES; it
			// sends nothing itself.
			cfg.SMS.Providers = []app.ProviderConfig{{Type: "twilio", AccountSID: twilioAccount, AuthTokenEnv: "TWILIO_TOKEN", From: "+15005550006"}}
			cfg.Email.Providers = []app.ProviderConfig{{Type: "ses", Region: "eu-west-1", Endpoint: ses.URL(),
				AccessKeyIDEnv: "SES_ID", SecretAccessKeyEnv: "SES_SECRET"}}
			// And serves the links: the preference page among them.
			cfg.Documents.LinkSecretEnv = "LINK_SECRET"
			cfg.Getenv = func(k string) string {
				return map[string]string{"TWILIO_TOKEN": twilioToken, "SES_ID": "AKIDEXAMPLE", "SES_SECRET": "permissions-test-secret",
					"LINK_SECRET": permissionsLinkSecret}[k]
			}
		}
		a, err := app.New(cfg, slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		require.NoError(t, a.Start(ctx), name)
		apps[name] = a
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, a.Stop(ctx))
		})
		require.Eventually(t, func() bool {
			resp, err := client.Get("http://" + a.HTTPAddr() + "/readyz")
			require.NoError(t, err)
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond, "%s is ready", name)
	}

	refused := make(chan error, 1)
	publisher, err := nats.Connect(as("publisher"), nats.CustomInboxPrefix(publisherInbox),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case refused <- err:
			default:
			}
		}))
	require.NoError(t, err)
	t.Cleanup(publisher.Close)
	pubJS, err := jetstream.New(publisher)
	require.NoError(t, err)
	order, err := os.ReadFile("../../../examples/events/order.created.json")
	require.NoError(t, err)
	_, err = pubJS.Publish(ctx, "orders.created", order)
	require.NoError(t, err, "a publisher publishes events")
	_, err = pubJS.Publish(ctx, "orders.created", []byte(`{"not": "an event"}`))
	require.NoError(t, err)
	// An invalid event too large to travel in its dead letter: the router
	// keeps its payload in the object store dlq_payloads.
	huge := `{"not": "an event", "pad": "` + strings.Repeat("x", int(publisher.MaxPayload())-4096) + `"}`
	_, err = pubJS.Publish(ctx, "orders.created", []byte(huge))
	require.NoError(t, err)

	// Another order through the HTTP API.
	viaAPI := strings.NewReplacer("evt-2026-11-30-0001", "evt-api-1", "PO-2026-0042", "PO-2026-0043").Replace(string(order))
	// call sends a request to the API with key, and returns its status
	// and body.
	call := func(key, method, path, body string) (int, []byte) {
		req, err := http.NewRequest(method, "http://"+apps["api"].APIAddr()+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, answer
	}
	// 401 until the API's watch has brought it the key.
	require.Eventually(t, func() bool {
		status, _ := call(apiKey, http.MethodPost, "/v1/events", viaAPI)
		return status == http.StatusAccepted
	}, 30*time.Second, 50*time.Millisecond)
	// And a notification its caller wrote.
	status, _ := call(apiKey, http.MethodPost, "/v1/notifications",
		`{"channel":"email","recipient":{"address":"olga@zarya.example"},"subject":"Terms","text":"Our terms.\n"}`)
	require.Equal(t, http.StatusAccepted, status)

	// And a third order through the outbox relay, as a service's
	// transaction wrote it.
	viaOutbox := strings.NewReplacer("evt-2026-11-30-0001", "evt-outbox-1", "PO-2026-0042", "PO-2026-0044").Replace(string(order))
	service, err := sql.Open("sqlite", strings.TrimPrefix(outboxDB, "sqlite:")+"?_txlock=immediate&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer service.Close()
	tx, err := service.Begin()
	require.NoError(t, err)
	require.NoError(t, outbox.Add(ctx, tx, outbox.Msg(&nats.Msg{Subject: "orders.created",
		Header: nats.Header{nats.MsgIdHdr: {"evt-outbox-1"}}, Data: []byte(viaOutbox)})))
	require.NoError(t, tx.Commit())

	mails := func() []string {
		files, err := filepath.Glob(filepath.Join(mailDir, "*.eml"))
		require.NoError(t, err)
		return files
	}
	// The notifications each order and the API created, as accepted.
	accepted := func() (n int) {
		for _, m := range heraldtest.StreamMessages(t, adminJS, "STATUS") {
			if m.Subject == "notify.accepted.acme" {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool {
		return len(denied.list()) > 0 || len(mails()) == 7 && len(heraldtest.StreamMessages(t, adminJS, "DLQ")) == 2 && accepted() == 4
	}, 60*time.Second, 50*time.Millisecond)
	require.Empty(t, denied.list(), "the server denied a service")
	require.Len(t, mails(), 7, "the three orders' two emails each, and the API's own")
	require.Equal(t, 4, accepted(), "one record per order, one for the API's notification")
	id := regexp.MustCompile(`ntf_[0-9a-f]{64}`).FindString(mails()[0])
	status, _ = call(apiKey, http.MethodGet, "/v1/notifications/"+id, "")
	require.Equal(t, http.StatusOK, status, "the API reads a notification from the ledger")
	// And lists them from the index the history service keeps.
	require.Eventually(t, func() bool {
		_, answer := call(apiKey, http.MethodGet, "/v1/notifications?state=delivered", "")
		var listed struct{ Notifications []json.RawMessage }
		require.NoError(t, json.Unmarshal(answer, &listed))
		return len(listed.Notifications) == 7
	}, 30*time.Second, 50*time.Millisecond, "the API lists the seven notifications delivered")
	// A provider's report, verified by the api, joined by the history
	// service: kept in the notification's ledger entry, told, and the
	// address suppressed.
	reportBounce(t, client, "http://"+apps["api"].APIAddr(), filepath.Base(mails()[0]))
	require.Eventually(t, func() bool {
		_, answer := call(apiKey, http.MethodGet, "/v1/notifications/"+id, "")
		return strings.Contains(string(answer), `"kind":"bounced"`)
	}, 30*time.Second, 50*time.Millisecond, "the report joined its notification")
	status, answer := call(apiKey, http.MethodGet, "/v1/suppressions", "")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(answer), "hard_bounce")

	entries := heraldtest.StreamMessages(t, adminJS, "DLQ")
	require.Len(t, entries, 2, "the invalid events' dead letters")
	require.NotEmpty(t, entries[0].Header.Get(deadletter.HeaderPayloadObject)+entries[1].Header.Get(deadletter.HeaderPayloadObject),
		"the large one's payload is kept in the object store")

	// Two low-stock alerts of one warehouse, gathered into one digest by
	// the workflow service and sent as one text.
	stock, err := os.ReadFile("../../../examples/events/inventory.low_stock.json")
	require.NoError(t, err)
	for i, sku := range []string{"SKU-A", "SKU-B"} {
		alert := strings.NewReplacer("evt-2026-11-30-0100", fmt.Sprintf("evt-stock-%d", i), "MILK-1L", sku).Replace(string(stock))
		_, err = pubJS.Publish(ctx, "inventory.low_stock", []byte(alert))
		require.NoError(t, err)
	}
	texts := func() []string {
		files, err := filepath.Glob(filepath.Join(textDir, "*.json"))
		require.NoError(t, err)
		return files
	}
	require.Eventually(t, func() bool { return len(denied.list()) > 0 || len(texts()) > 0 }, 60*time.Second, 50*time.Millisecond)
	require.Empty(t, denied.list(), "the server denied a service")
	require.Len(t, texts(), 1, "one digest")
	digest, err := os.ReadFile(texts()[0])
	require.NoError(t, err)
	require.Contains(t, string(digest), "SKU-A")
	require.Contains(t, string(digest), "SKU-B")

	// What an operator does over HTTP, with an admin key.
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/v1/tenants", `{"id":"globex","plan":"startup"}`, http.StatusCreated},
		{http.MethodPatch, "/v1/tenants/globex", `{"name":"Globex"}`, http.StatusOK},
		{http.MethodGet, "/v1/tenants", "", http.StatusOK},
		{http.MethodPost, "/v1/keys", `{"tenant":"globex","scopes":["read"]}`, http.StatusCreated},
		{http.MethodGet, "/v1/keys", "", http.StatusOK},
		{http.MethodPut, "/v1/tenants/globex/providers/sg-globex", `{"type":"sendgrid","api_key":"SG.permissions-test-key"}`, http.StatusOK},
		{http.MethodGet, "/v1/tenants/globex/providers", "", http.StatusOK},
		{http.MethodDelete, "/v1/tenants/globex/providers/sg-globex", "", http.StatusNoContent},
		{http.MethodGet, "/v1/dlq", "", http.StatusOK},
		{http.MethodGet, fmt.Sprintf("/v1/dlq/%d", entries[0].Sequence), "", http.StatusOK},
		{http.MethodGet, fmt.Sprintf("/v1/dlq/%d", entries[1].Sequence), "", http.StatusOK},
		{http.MethodPost, fmt.Sprintf("/v1/dlq/%d/redrive", entries[0].Sequence), "", http.StatusAccepted},
		{http.MethodPost, "/v1/suppressions?tenant=globex", `{"address":"ops@globex.example"}`, http.StatusCreated},
		{http.MethodGet, "/v1/suppressions?tenant=globex", "", http.StatusOK},
		{http.MethodDelete, "/v1/suppressions/ops@globex.example?tenant=globex", "", http.StatusNoContent},
		{http.MethodPost, "/v1/domains?tenant=globex", `{"domain":"globex.example"}`, http.StatusCreated},
		{http.MethodGet, "/v1/domains/globex.example?tenant=globex", "", http.StatusOK},
		{http.MethodGet, "/v1/domains?tenant=globex", "", http.StatusOK},
		{http.MethodDelete, "/v1/domains/globex.example?tenant=globex", "", http.StatusNoContent},
		{http.MethodPut, "/v1/templates/low_stock/en?tenant=globex", `{"subject":"Low: {{.Stock.SKU}}","text":"{{.Stock.SKU}} is low."}`, http.StatusOK},
		{http.MethodGet, "/v1/templates?tenant=globex", "", http.StatusOK},
		{http.MethodPost, "/v1/templates/preview?tenant=globex", `{"name":"low_stock","locale":"en"}`, http.StatusOK},
		{http.MethodDelete, "/v1/templates/low_stock/en?tenant=globex", "", http.StatusNoContent},
		{http.MethodPut, "/v1/workflows/po-reminder?tenant=globex", `{"event":"order.created","kind":"purchase","document":"purchase_order",` +
			`"roles":["supplier"],"channels":["email"],"steps":[{"send":{}},{"wait":{"for":"1h"}},{"send":{}}]}`, http.StatusCreated},
		// Refused as start-up refuses the config: templates Herald does not
		// ship (a digest's form of the purchase order, a named one).
		{http.MethodPut, "/v1/workflows/undigested?tenant=globex", `{"event":"order.created","document":"purchase_order","channels":["email"],` +
			`"steps":[{"digest":{"key":"{{.Order.Supplier.Name}}","window":"1h"}},{"send":{}}]}`, http.StatusUnprocessableEntity},
		{http.MethodPut, "/v1/workflows/untemplated?tenant=globex", `{"event":"order.created","document":"purchase_order","channels":["email"],` +
			`"steps":[{"send":{"template":"po_nudge"}}]}`, http.StatusUnprocessableEntity},
		{http.MethodGet, "/v1/workflows/po-reminder?tenant=globex", "", http.StatusOK},
		{http.MethodGet, "/v1/workflows?tenant=globex", "", http.StatusOK},
		{http.MethodDelete, "/v1/workflows/po-reminder?tenant=globex", "", http.StatusNoContent},
		{http.MethodPut, "/v1/subscribers/u.olga?tenant=globex", `{"email":"olga@globex.example","timezone":"Europe/Moscow"}`, http.StatusCreated},
		{http.MethodPatch, "/v1/subscribers/u.olga?tenant=globex", `{"locale":"ru"}`, http.StatusOK},
		{http.MethodPost, "/v1/subscribers:import?tenant=globex", `{"id":"u-ivan"}`, http.StatusOK},
		{http.MethodPut, "/v1/subscribers/u.olga/preferences?tenant=globex", `{"alerts":{"sms":false}}`, http.StatusOK},
		// The routes' required category is not switched off.
		{http.MethodPut, "/v1/preferences/defaults?tenant=globex", `{"documents":{"email":false}}`, http.StatusUnprocessableEntity},
		{http.MethodPut, "/v1/accounts/zarya?tenant=globex", `{"members":[{"subscriber":"u.olga","roles":["sales"]}]}`, http.StatusCreated},
		{http.MethodGet, "/v1/accounts?tenant=globex", "", http.StatusOK},
		{http.MethodPut, "/v1/topics/sevilla?tenant=globex", `{}`, http.StatusCreated},
		{http.MethodPost, "/v1/topics/sevilla/subscribers?tenant=globex", `{"add":["u.olga"]}`, http.StatusOK},
		{http.MethodGet, "/v1/topics/sevilla/subscribers?tenant=globex", "", http.StatusOK},
		{http.MethodDelete, "/v1/topics/sevilla?tenant=globex", "", http.StatusNoContent},
	} {
		status, answer := call(adminKey, c.method, c.path, c.body)
		require.Equal(t, c.want, status, "%s %s: %s", c.method, c.path, answer)
	}
	// A webhook redelivery reads the tenant's outcomes from the ledger's stream.
	status, answer = call(adminKey, http.MethodPost, "/v1/webhooks/endpoints?tenant=acme",
		`{"url":"https://erp.acme.example/herald","events":["webhook.*"]}`)
	require.Equal(t, http.StatusCreated, status, "%s", answer)
	var endpoint struct{ ID string }
	require.NoError(t, json.Unmarshal(answer, &endpoint))
	status, answer = call(adminKey, http.MethodPost, "/v1/webhooks/endpoints/"+endpoint.ID+"/redeliver?tenant=acme",
		fmt.Sprintf(`{"since":%q,"dry_run":true}`, time.Now().Add(-time.Hour).Format(time.RFC3339)))
	require.Equal(t, http.StatusAccepted, status, "%s", answer)

	// A subscriber's preference page reads her and her choices, and saves
	// them.
	requirePreferencePageSaves(t, adminJS, client, "http://"+apps["api"].APIAddr())

	// And in the console: sign in, the live flow, the streams against their
	// declarations, a dead letter redriven — each action audited.
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	console := "http://" + apps["api"].APIAddr() + "/console/"
	resp, err := browser.PostForm(console+"signin", url.Values{"key": {adminKey}, "next": {"/console/dlq"}})
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(page)
	require.NotNil(t, csrf)
	for _, path := range []string{"flow", "streams", fmt.Sprintf("dlq/%d", entries[1].Sequence)} {
		resp, err := browser.Get(console + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	resp, err = browser.PostForm(console+"dlq/redrive", url.Values{"csrf": {string(csrf[1])}, "seq": {fmt.Sprint(entries[1].Sequence)}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Len(t, heraldtest.StreamMessages(t, adminJS, "AUDIT"), 2, "the sign-in and the redrive")

	require.NoError(t, publisher.Publish("notify.email.normal.acme", []byte(`{}`)))
	require.NoError(t, publisher.Flush())
	select {
	case err := <-refused:
		require.True(t, errors.Is(err, nats.ErrPermissionViolation), "%v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("a publisher published a delivery")
	}
	for _, line := range denied.list() {
		require.Contains(t, line, `"notify.email.normal.acme"`, "only the publisher's attempt was denied")
	}
}

const (
	twilioAccount = "AC00000000000000000000000000000001"
	twilioToken   = "permissions-test-twilio-token"
)

// reportBounce posts a Twilio status callback, signed with the platform
// account's token as Twilio signs it, saying the message the provider
// accepted under messageID bounced for good. The join is by message id,
// whichever provider gave it: here the maildir sink.
func reportBounce(t *testing.T, client *http.Client, api, messageID string) {
	t.Helper()
	form := url.Values{"AccountSid": {twilioAccount}, "MessageSid": {messageID}, "MessageStatus": {"undelivered"},
		"ErrorCode": {"30005"}, "To": {"+34600111222"}}
	target := api + "/v1/inbound/twilio"
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", twiliotest.Signature(twilioToken, target, form))
	resp, err := client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
}

// permissionsLinkSecret is the api's link secret in the permissions test.
var permissionsLinkSecret = strings.Repeat("l", 32)

// requirePreferencePageSaves opens a subscriber's preference page on the
// api at base and switches alerts off for SMS: the page reads the
// subscriber and the preferences, and writes them.
func requirePreferencePageSaves(t *testing.T, adminJS jetstream.JetStream, client *http.Client, base string) {
	t.Helper()
	ctx := heraldtest.Context(t)
	dir, err := recipient.Open(ctx, adminJS)
	require.NoError(t, err)
	_, err = dir.Subscribers.Put(ctx, recipient.Subscriber{Tenant: "acme", ID: "u-olga", Email: "olga@zarya.example", Phone: "+79160000000"})
	require.NoError(t, err)
	signer, err := preferencepage.NewSigner([]byte(permissionsLinkSecret), base)
	require.NoError(t, err)
	link := signer.Link(preferencepage.Whose{Tenant: "acme", Subscriber: "u-olga"})
	resp, err := client.Get(link)
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	resp, err = client.PostForm(link, url.Values{"alerts.sms": {"off"}})
	require.NoError(t, err)
	page, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", page)
	p, _, err := dir.Preferences.Get(ctx, recipient.PreferencesKey("acme", "u-olga"))
	require.NoError(t, err)
	require.Equal(t, recipient.Choices{"alerts": {event.ChannelSMS: false}}, p.Categories)
}
