package streams_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jsm.go/api"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/streams"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, heraldtest.LeakOptions...) }

// declarationFiles walks the directory on disk, not the embedded copy, so a
// file the embed pattern misses is caught too.
func declarationFiles(t *testing.T) (streamFiles, consumerFiles []string) {
	t.Helper()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil || d.IsDir() || !strings.HasSuffix(path, ".json"):
			return err
		case filepath.Base(path) == "stream.json":
			streamFiles = append(streamFiles, path)
		case filepath.Base(filepath.Dir(path)) == "consumers":
			consumerFiles = append(consumerFiles, path)
		default:
			t.Errorf("%s: a declaration is either <STREAM>/stream.json or <STREAM>/consumers/<name>.json", path)
		}
		return nil
	})
	require.NoError(t, err)
	return streamFiles, consumerFiles
}

// strictly decodes b into v, refusing fields v does not know.
func strictly(t *testing.T, path string, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), "%s does not decode into %T", path, v)
}

// The nats CLI (natscli v0.5.0) reads `--config FILE` into jsm.go's api
// types; the server validates against its own. Every field of every file
// must mean something to both.
func TestFilesAreWhatTheNATSCLIAndServerRead(t *testing.T) {
	t.Parallel()
	streamFiles, consumerFiles := declarationFiles(t)
	require.NotEmpty(t, streamFiles)
	for _, path := range streamFiles {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var cli api.StreamConfig
		strictly(t, path, b, &cli)
		require.Equal(t, filepath.Base(filepath.Dir(path)), cli.Name, path)
		strictly(t, path, b, &server.StreamConfig{})
	}
	for _, path := range consumerFiles {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var cli api.ConsumerConfig
		strictly(t, path, b, &cli)
		require.Equal(t, strings.TrimSuffix(filepath.Base(path), ".json"), cli.Durable, path)
		strictly(t, path, b, &server.ConsumerConfig{})
	}
}

func TestEveryFileIsEmbedded(t *testing.T) {
	t.Parallel()
	streamFiles, consumerFiles := declarationFiles(t)
	all, err := streams.Load()
	require.NoError(t, err)
	var embedded []string
	for _, s := range all {
		embedded = append(embedded, filepath.FromSlash(s.File))
		for _, c := range s.Consumers {
			embedded = append(embedded, filepath.FromSlash(c.File))
		}
	}
	onDisk := append(streamFiles, consumerFiles...)
	slices.Sort(onDisk)
	slices.Sort(embedded)
	require.Equal(t, onDisk, embedded)
}

// The layout docs/ARCHITECTURE.md describes, as the files must declare it.
func TestDeclaresDesignLayout(t *testing.T) {
	t.Parallel()
	want := map[string]struct {
		retention jetstream.RetentionPolicy
		subjects  []string
		consumers []string
	}{
		"ORDERS":    {jetstream.LimitsPolicy, []string{"orders.*", "orders.*.*"}, []string{"router"}},
		"INVENTORY": {jetstream.LimitsPolicy, []string{"inventory.*", "inventory.*.*"}, []string{"router"}},
		"DOCS":      {jetstream.WorkQueuePolicy, []string{"docs.render.*.*", "docs.render.*"}, []string{"pdf"}},
		"NOTIFY": {jetstream.WorkQueuePolicy, []string{"notify.email.*.*", "notify.sms.*.*", "notify.whatsapp.*.*", "notify.webhook.*.*", "notify.inbox.*.*", "notify.push.*.*"}, []string{"email-critical", "email-low", "email-normal",
			"inbox-critical", "inbox-low", "inbox-normal", "push-critical", "push-low", "push-normal", "sms-critical", "sms-low", "sms-normal",
			"webhook-critical", "webhook-low", "webhook-normal", "whatsapp-critical", "whatsapp-low", "whatsapp-normal"}},
		"STATUS":               {jetstream.LimitsPolicy, []string{"notify.status.*", "notify.accepted.*"}, []string{"alerts", "history", "webhooks"}},
		"ADVISORIES":           {jetstream.LimitsPolicy, []string{"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>", "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>"}, []string{"dlq"}},
		"DLQ":                  {jetstream.LimitsPolicy, []string{"dlq.*.*"}, []string{"alerts"}},
		"KV_dlq_redrives":      {jetstream.LimitsPolicy, []string{"$KV.dlq_redrives.>"}, nil},
		"KV_deliveries":        {jetstream.LimitsPolicy, []string{"$KV.deliveries.>"}, []string{"history", "webhooks"}},
		"KV_delivery_retries":  {jetstream.LimitsPolicy, []string{"$KV.delivery_retries.>"}, nil},
		"KV_credentials":       {jetstream.LimitsPolicy, []string{"$KV.credentials.>"}, nil},
		"KV_tenants":           {jetstream.LimitsPolicy, []string{"$KV.tenants.>"}, nil},
		"KV_plans":             {jetstream.LimitsPolicy, []string{"$KV.plans.>"}, nil},
		"KV_api_keys":          {jetstream.LimitsPolicy, []string{"$KV.api_keys.>"}, nil},
		"KV_idempotency":       {jetstream.LimitsPolicy, []string{"$KV.idempotency.>"}, nil},
		"KV_webhook_endpoints": {jetstream.LimitsPolicy, []string{"$KV.webhook_endpoints.>"}, nil},
		"KV_suppressions":      {jetstream.LimitsPolicy, []string{"$KV.suppressions.>"}, nil},
		"KV_sending_domains":   {jetstream.LimitsPolicy, []string{"$KV.sending_domains.>"}, nil},
		"KV_templates":         {jetstream.LimitsPolicy, []string{"$KV.templates.>"}, nil},
		// Tenants' own workflows, followed by the router.
		"KV_workflows":  {jetstream.LimitsPolicy, []string{"$KV.workflows.>"}, nil},
		"REPORTS":       {jetstream.LimitsPolicy, []string{"notify.reports.*"}, []string{"history"}},
		"QUOTAS":        {jetstream.LimitsPolicy, []string{"quota.*.*.*", "quota.*.*.*.refused"}, nil},
		"OBJ_documents": {jetstream.LimitsPolicy, []string{"$O.documents.C.>", "$O.documents.M.>"}, nil},

		// The web console's sessions, and what operators did in it.
		"KV_console_sessions": {jetstream.LimitsPolicy, []string{"$KV.console_sessions.>"}, nil},
		"AUDIT":               {jetstream.LimitsPolicy, []string{"audit.>"}, nil},
		"KV_circuits":         {jetstream.LimitsPolicy, []string{"$KV.circuits.>"}, nil},
		// The events the router routed, by tenant and id.
		"KV_events": {jetstream.LimitsPolicy, []string{"$KV.events.>"}, nil},

		// Recipients Herald knows: people, companies, lists, what they agreed to.
		"KV_subscribers":   {jetstream.LimitsPolicy, []string{"$KV.subscribers.>"}, []string{"history"}},
		"KV_accounts":      {jetstream.LimitsPolicy, []string{"$KV.accounts.>"}, nil},
		"KV_topics":        {jetstream.LimitsPolicy, []string{"$KV.topics.>"}, nil},
		"KV_topic_members": {jetstream.LimitsPolicy, []string{"$KV.topic_members.>"}, nil},
		"KV_preferences":   {jetstream.LimitsPolicy, []string{"$KV.preferences.>"}, nil},
		// Each subscriber's in-app feed, and its change log.
		"KV_inbox": {jetstream.LimitsPolicy, []string{"$KV.inbox.>"}, nil},
		// Subscribers' push devices: FCM and APNs tokens, Web Push subscriptions.
		"KV_devices": {jetstream.LimitsPolicy, []string{"$KV.devices.>"}, nil},
		// A topic's fan-out, a page at a time, per tenant in turn: the
		// router's consumers are made per tenant from its own template.
		"FANOUT": {jetstream.WorkQueuePolicy, []string{"fanout.*"}, nil},
		// Workflow runs: their messages (starts, events, timers' wakes,
		// waiting steps' schedules, sends) and their state.
		"RUNS":    {jetstream.WorkQueuePolicy, []string{"runs.in.*", "runs.wake.*", "runs.timer.*.*.*", "runs.send.*", "runs.digest.*.*", "runs.flush.*.*"}, nil},
		"KV_runs": {jetstream.LimitsPolicy, []string{"$KV.runs.>"}, nil},
		// Throttle steps' counters, per key and period.
		"THROTTLES": {jetstream.LimitsPolicy, []string{"throttle.*.*.*"}, nil},

		// Payloads of dead letters too large to travel in their entry.
		"OBJ_dlq_payloads": {jetstream.LimitsPolicy, []string{"$O.dlq_payloads.C.>", "$O.dlq_payloads.M.>"}, nil},
	}
	all, err := streams.Load()
	require.NoError(t, err)
	require.Len(t, all, len(want))
	for _, s := range all {
		w, ok := want[s.Config.Name]
		require.True(t, ok, "unexpected stream %s", s.Config.Name)
		require.Equal(t, w.retention, s.Config.Retention, s.Config.Name)
		require.Equal(t, w.subjects, s.Config.Subjects, s.Config.Name)
		var consumers []string
		for _, c := range s.Consumers {
			consumers = append(consumers, c.Config.Durable)
		}
		require.Equal(t, w.consumers, consumers, s.Config.Name)
	}
	orders, err := streams.Find("ORDERS")
	require.NoError(t, err)
	require.GreaterOrEqual(t, orders.Config.Duplicates, 10*time.Minute, "docs/ARCHITECTURE.md: ORDERS duplicate window ≥ 10 min")
	// Fair scheduling makes a consumer per tenant with a backlog (per
	// channel and priority) on NOTIFY and DOCS; nats-server allows a stream
	// 1,000 consumers unless the stream declares its own limit (-1 does
	// not count).
	for _, name := range []string{"NOTIFY", "DOCS", "FANOUT"} {
		s, err := streams.Find(name)
		require.NoError(t, err)
		require.GreaterOrEqual(t, s.Config.MaxConsumers, 100_000, name)
	}
}

// What is kept, and for how long: the ledger and its retry index forget
// after 90 days (ledger.retention), documents are kept until someone
// decides otherwise (documents.retention), tenants until they are deleted,
// an Idempotency-Key is answered for 24 hours (api.idempotency_ttl),
// usage counts for 400 days.
func TestDeclaredRetention(t *testing.T) {
	t.Parallel()
	want := map[string]time.Duration{
		"KV_deliveries":       90 * 24 * time.Hour,
		"KV_delivery_retries": 90 * 24 * time.Hour,
		"KV_idempotency":      24 * time.Hour,
		"OBJ_documents":       0,
		"KV_tenants":          0,
		"KV_suppressions":     0,
		"KV_sending_domains":  0,
		"KV_templates":        0,
		"KV_workflows":        0,
		"KV_inbox":            0,
		// A month's counts outlive the month by a year and a bit, for
		// last year's same month.
		"QUOTAS": 400 * 24 * time.Hour,
	}
	for name, age := range want {
		s, err := streams.Find(name)
		require.NoError(t, err)
		require.Equal(t, age, s.Config.MaxAge, name)
	}
}

func TestApplyCreatesThenLeavesAlone(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)

	report, err := streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	require.Len(t, report, 69)
	for _, r := range report {
		require.Equal(t, streams.Created, r.Action, r.String())
	}

	report, err = streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	for _, r := range report {
		require.Equal(t, streams.Unchanged, r.Action, r.String())
	}
}

// Check reports what Apply would do and changes nothing: everything
// missing on a new server; after Apply, a stream edited by hand differs,
// field by field, and is left as it is.
func TestCheckReportsDriftWithoutChangingIt(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	report, err := streams.Check(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.Len(t, report, 39, "the streams only: a missing stream's consumers cannot exist")
	for _, r := range report {
		require.Equal(t, streams.Missing, r.Action, r.String())
	}
	require.Equal(t, 39, report.Drifted())
	names := n.JS.StreamNames(ctx)
	for range names.Name() {
		t.Fatal("Check created a stream")
	}

	_, err = streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	s, err := n.JS.Stream(ctx, "DLQ")
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	cfg.MaxAge = time.Hour
	_, err = n.JS.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, n.JS.DeleteConsumer(ctx, "ORDERS", "router"))

	report, err = streams.Check(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.Equal(t, 2, report.Drifted())
	for _, r := range report {
		switch {
		case r.Kind == "stream" && r.Name == "DLQ":
			require.Equal(t, streams.Differs, r.Action)
			require.Equal(t, []string{"max_age: 1h0m0s → 720h0m0s"}, r.Changes)
		case r.Kind == "consumer" && r.Stream == "ORDERS" && r.Name == "router":
			require.Equal(t, streams.Missing, r.Action)
		default:
			require.Equal(t, streams.Unchanged, r.Action, r.String())
		}
	}
	s, err = n.JS.Stream(ctx, "DLQ")
	require.NoError(t, err)
	require.Equal(t, time.Hour, s.CachedInfo().Config.MaxAge, "left as it was")
}

func TestApplyUpdatesWhatDiffers(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)

	// An operator edits the stream and a consumer by hand.
	orders, err := streams.Find("ORDERS")
	require.NoError(t, err)
	edited := orders.Config
	edited.MaxAge = time.Hour
	_, err = n.JS.UpdateStream(ctx, edited)
	require.NoError(t, err)
	router, err := orders.Consumer("router")
	require.NoError(t, err)
	editedConsumer := router.Config
	editedConsumer.MaxDeliver = 3
	_, err = n.JS.UpdateConsumer(ctx, "ORDERS", editedConsumer)
	require.NoError(t, err)

	report, err := streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	changed := map[string][]string{}
	for _, r := range report {
		if r.Action != streams.Unchanged {
			require.Equal(t, streams.Updated, r.Action, r.String())
			changed[r.Stream+"/"+r.Name] = r.Changes
		}
	}
	require.Equal(t, map[string][]string{
		"ORDERS/ORDERS": {"max_age: 1h0m0s → 168h0m0s"},
		"ORDERS/router": {"max_deliver: 3 → 20"},
	}, changed)

	info, err := n.JS.Stream(ctx, "ORDERS")
	require.NoError(t, err)
	require.Equal(t, 7*24*time.Hour, info.CachedInfo().Config.MaxAge)
}

func TestApplyReportsRefusedChange(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)

	// Someone created NOTIFY by hand with the wrong retention, which the
	// server cannot change in place.
	notify, err := streams.Find("NOTIFY")
	require.NoError(t, err)
	wrong := notify.Config
	wrong.Retention = jetstream.LimitsPolicy
	_, err = n.JS.CreateStream(ctx, wrong)
	require.NoError(t, err)

	report, err := streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	var refused []streams.Result
	for _, r := range report {
		if r.Action == streams.Refused {
			refused = append(refused, r)
		}
	}
	require.Len(t, refused, 1, "only the stream is refused; its consumers still apply")
	require.Equal(t, "NOTIFY", refused[0].Name)
	require.Equal(t, []string{`retention: "limits" → "workqueue"`}, refused[0].Changes)
	require.ErrorContains(t, report.Err(), "streams/NOTIFY/stream.json")

	info, err := n.JS.Stream(ctx, "NOTIFY")
	require.NoError(t, err)
	require.Equal(t, jetstream.LimitsPolicy, info.CachedInfo().Config.Retention, "a refused change is not forced")
}

func TestApplyOverridesMaxAge(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)

	opts := streams.Options{MaxAge: map[string]time.Duration{"KV_deliveries": 60 * 24 * time.Hour, "OBJ_documents": 365 * 24 * time.Hour}}
	report, err := streams.Apply(ctx, n.JS, opts)
	require.NoError(t, err)
	require.NoError(t, report.Err())
	changed := map[string][]string{}
	for _, r := range report {
		if r.Action != streams.Unchanged {
			changed[r.Name] = r.Changes
		}
	}
	require.Equal(t, map[string][]string{
		"KV_deliveries": {"max_age: 2160h0m0s → 1440h0m0s"},
		"OBJ_documents": {"max_age: (unset) → 8760h0m0s"},
	}, changed)
	kv, err := n.JS.KeyValue(ctx, "deliveries")
	require.NoError(t, err)
	status, err := kv.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, 60*24*time.Hour, status.TTL(), "a bucket's TTL is its stream's max_age")

	report, err = streams.Apply(ctx, n.JS, opts)
	require.NoError(t, err)
	for _, r := range report {
		require.Equal(t, streams.Unchanged, r.Action, r.String())
	}

	_, err = streams.Apply(ctx, n.JS, streams.Options{MaxAge: map[string]time.Duration{"KV_delivery": time.Hour}})
	require.ErrorContains(t, err, "KV_delivery, which is not declared")
}

// The KV and object store declarations must be buckets the client
// libraries recognise and use as such.
func TestBucketsWorkAsBuckets(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATSWithStreams(t)
	ctx := heraldtest.Context(t)

	kv, err := n.JS.KeyValue(ctx, "deliveries")
	require.NoError(t, err)
	_, err = kv.Create(ctx, "acme.key", []byte("claimed"))
	require.NoError(t, err)
	_, err = kv.Create(ctx, "acme.key", []byte("again"))
	require.ErrorIs(t, err, jetstream.ErrKeyExists, "Create is the ledger's atomic claim")

	obj, err := n.JS.ObjectStore(ctx, "documents")
	require.NoError(t, err)
	_, err = obj.PutBytes(ctx, "acme/PO-1/purchase_order-r1.pdf", []byte("%PDF-1.7"))
	require.NoError(t, err)
	got, err := obj.GetBytes(ctx, "acme/PO-1/purchase_order-r1.pdf")
	require.NoError(t, err)
	require.Equal(t, []byte("%PDF-1.7"), got)

	payloads, err := n.JS.ObjectStore(ctx, "dlq_payloads")
	require.NoError(t, err)
	status, err := payloads.Status(ctx)
	require.NoError(t, err)
	dlq, err := streams.Find("DLQ")
	require.NoError(t, err)
	require.Greater(t, status.TTL(), dlq.Config.MaxAge, "a kept payload outlives the entry that names it")
}

// Back from fair scheduling: the consumers it made per tenant on NOTIFY
// would overlap the durables on the work queue, which the server would
// refuse; apply removes them, and makes the durables.
func TestApplyFirstComeRemovesPerTenantConsumers(t *testing.T) {
	t.Parallel()
	n := heraldtest.StartNATS(t)
	ctx := heraldtest.Context(t)
	report, err := streams.Apply(ctx, n.JS, streams.Options{Templates: []string{"NOTIFY", "DOCS"}})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	_, err = n.JS.CreateConsumer(ctx, "NOTIFY", jetstream.ConsumerConfig{Name: "email-normal_acme",
		FilterSubject: "notify.email.normal.acme", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)

	report, err = streams.Apply(ctx, n.JS, streams.Options{})
	require.NoError(t, err)
	require.NoError(t, report.Err())
	var removed, created []string
	for _, r := range report {
		switch r.Action {
		case streams.Removed:
			removed = append(removed, r.Stream+" > "+r.Name)
		case streams.Created:
			created = append(created, r.Stream+" > "+r.Name)
		}
	}
	require.Equal(t, []string{"NOTIFY > email-normal_acme"}, removed)
	require.Contains(t, created, "NOTIFY > email-normal")
}
