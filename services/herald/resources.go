package main

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/vault"
)

// A tenant resource's commands (herald suppressions, domains, webhooks…:
// list, show, add, remove) are made one way: each is on one tenant's
// records (--tenant, required), connects to NATS, opens the resource's
// store and runs against it; a list prints a table, or with --json JSON,
// [] when there is nothing. What a command writes, the record's audit
// trail says the command line wrote, as which user of the machine
// (cliActor); `changes` prints that trail.

// resourceCommands makes the commands of a tenant resource whose store,
// as its commands use it, is S.
type resourceCommands[S any] struct {
	// open opens the store; keys is the master key ring for a command
	// that seals secrets, nil for the others.
	open func(ctx context.Context, cfg app.Config, js jetstream.JetStream, keys *vault.Keyring) (S, error)
}

// resourceCommand is one command on a tenant's records.
type resourceCommand[S any] struct {
	use, short, long, example string
	// key is the flag that names the one record the command is on
	// ("domain", "id"), required, and keyUsage its usage; none for a
	// command on many.
	key, keyUsage string
	// args, when set, are the positional arguments the command takes
	// instead (cobra.ExactArgs(1)): the first names the record, the key
	// run is given; run reads the others from cmd.Flags().Args().
	args cobra.PositionalArgs
	// flags adds the command's own flags, beside --tenant; required
	// names those that must be given.
	flags    func(*cobra.Command)
	required []string
	// check refuses what the flags get wrong before the master key is
	// read or NATS reached; nil when the store is the judge.
	check func(cmd *cobra.Command) error
	// seals says the command seals secrets: it takes --master-key-file,
	// and the store opens with the master key.
	seals bool
	// run runs the command on the tenant's records, or on the one key
	// names.
	run func(cmd *cobra.Command, ctx context.Context, s S, tenant, key string) error
}

// command makes c.
func (r resourceCommands[S]) command(c resourceCommand[S]) *cobra.Command {
	cmd := &cobra.Command{
		Use: c.use, Short: c.short, Long: c.long, Example: c.example, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant, _ := cmd.Flags().GetString("tenant")
			var key string
			if c.key != "" {
				key, _ = cmd.Flags().GetString(c.key)
			}
			if c.args != nil {
				key = args[0]
			}
			if c.check != nil {
				if err := c.check(cmd); err != nil {
					return err
				}
			}
			var keys *vault.Keyring
			if c.seals {
				var err error
				if keys, err = cliKeyring(cmd); err != nil {
					return err
				}
			}
			return r.with(cmd, keys, func(ctx context.Context, s S) error { return c.run(cmd, ctx, s, tenant, key) })
		},
	}
	if c.args != nil {
		cmd.Args = c.args
	}
	cmd.Flags().String("tenant", "", "the tenant (required)")
	required := append([]string{"tenant"}, c.required...)
	if c.key != "" {
		cmd.Flags().String(c.key, "", c.keyUsage)
		required = append(required, c.key)
	}
	if c.flags != nil {
		c.flags(cmd)
	}
	if c.seals {
		masterKeyFlag(cmd)
	}
	for _, name := range required {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// with connects and runs fn against the store, opened with keys (nil but
// for a command that seals).
func (r resourceCommands[S]) with(cmd *cobra.Command, keys *vault.Keyring, fn func(context.Context, S) error) error {
	return withNATS(cmd, func(ctx context.Context, cfg app.Config, js jetstream.JetStream) error {
		s, err := r.open(ctx, cfg, js, keys)
		if err != nil {
			return err
		}
		return fn(resource.WithActor(ctx, cliActor()), s)
	})
}

// cliActor is who the command line writes as in a record's audit trail:
// "cli:" and the machine's user who ran it. The command line holds no API
// key to name — whoever reaches NATS with the master key may write — so
// the operating system's account is the one name there is; "cli" alone
// when it cannot be told.
func cliActor() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return "cli:" + name
	}
	return "cli"
}

// listCommand makes `list --tenant ID [--json]`: the tenant's records, as
// list (the store's method: (*Store).List) reads them, a row of row's
// cells under header each.
func listCommand[S, E any](r resourceCommands[S], short string, list func(S, context.Context, string) ([]E, error),
	header []any, row func(E) []any) *cobra.Command {
	return r.command(resourceCommand[S]{
		use: "list --tenant ID [--json]", short: short,
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, s S, tenant, _ string) error {
			records, err := list(s, ctx, tenant)
			if err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				if records == nil {
					records = []E{} // none is an empty list, not null
				}
				return json.NewEncoder(cmd.OutOrStdout()).Encode(records)
			}
			w := newTable(cmd.OutOrStdout(), header...)
			for _, e := range records {
				w.row(row(e)...)
			}
			return w.flush()
		},
	})
}

// change is one revision of a record as `changes` prints it.
type change struct {
	Revision uint64 `json:"revision"`
	// Operation is "write" or "delete".
	Operation string    `json:"operation"`
	Actor     string    `json:"actor"`
	Time      time.Time `json:"time"`
}

func changeOf(c resource.Change) change {
	op := "write"
	if c.Deleted {
		op = "delete"
	}
	return change{Revision: c.Revision, Operation: op, Actor: c.Actor, Time: c.Time.UTC()}
}

// changesCommand makes `changes --tenant ID --<key> K [--json]`: the audit
// trail of the tenant's record that key names — each revision the bucket
// keeps, oldest first, what was done, by whom, when. changes reads it
// (Store.Changes) at the key the resource's own key rule makes of the
// tenant and the flags: what the caller types is never the KV key, so it
// reaches the tenant's own record and no other. flags adds the flags that
// name a record beside key (a suppression's channel), nil for none.
func changesCommand[S any](r resourceCommands[S], what, key, keyUsage string, flags func(*cobra.Command),
	changes func(s S, cmd *cobra.Command, ctx context.Context, tenant, key string) ([]resource.Change, error)) *cobra.Command {
	return r.command(resourceCommand[S]{
		use: "changes --tenant ID --" + key + " " + strings.ToUpper(key) + " [--json]", short: "Show who changed " + what + ", and when",
		key: key, keyUsage: keyUsage,
		flags: func(cmd *cobra.Command) {
			cmd.Flags().Bool("json", false, "print JSON")
			if flags != nil {
				flags(cmd)
			}
		},
		run: func(cmd *cobra.Command, ctx context.Context, s S, tenant, key string) error {
			trail, err := changes(s, cmd, ctx, tenant, key)
			if err != nil {
				return err
			}
			out := make([]change, len(trail))
			for i, c := range trail {
				out[i] = changeOf(c)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			}
			w := newTable(cmd.OutOrStdout(), "REVISION", "TIME", "OPERATION", "BY")
			for _, c := range out {
				w.row(c.Revision, c.Time.Format(time.RFC3339), c.Operation, cmp.Or(c.Actor, "(unknown)"))
			}
			return w.flush()
		},
	})
}
