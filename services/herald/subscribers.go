package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/router"
	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
	"github.com/heraldhq/herald/shared/vault"
)

// recipients is the directory as the recipient commands use it, with the
// categories the configured routes mark required (which preferences may
// not switch off).
type recipients struct {
	*recipient.Directory
	required []string
}

// recipientCommands reach the directory of subscribers, accounts, topics
// and preferences.
var recipientCommands = resourceCommands[recipients]{
	open: func(ctx context.Context, cfg app.Config, js jetstream.JetStream, _ *vault.Keyring) (recipients, error) {
		d, err := recipient.Open(ctx, js)
		if err != nil {
			return recipients{}, err
		}
		return recipients{d, recipient.RequiredOf(router.Categories(cfg.Router.WithDefaults().Routes))}, nil
	},
}

// subscribersEditCommands are the commands that write and read one
// subscriber, beside the listing's and the erasure's under `herald
// subscribers` (subscribers_cmd.go).
func subscribersEditCommands() []*cobra.Command {
	return []*cobra.Command{subscribersSetCommand(), subscribersGetCommand(), subscribersImportCommand()}
}

// subscriberFlags are the flags of the fields `set` changes, by name.
var subscriberFlags = []struct{ name, usage string }{
	{"name", "the person's name"},
	{"email", "email address"},
	{"phone", "phone number for SMS, E.164 (+34600111222)"},
	{"whatsapp", "WhatsApp number, E.164"},
	{"locale", "BCP 47 language tag (ru, es-MX)"},
	{"timezone", "IANA time zone (Europe/Moscow)"},
	{"data", "free JSON for templates, up to 16 KiB; replaces the data kept"},
}

func subscribersSetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use:   "set ID --tenant T [--email E] [--phone P] [--whatsapp W] [--locale L] [--timezone Z] [--name N] [--data JSON]",
		short: "Create a subscriber, or change the fields given",
		long: `Stores the subscriber under ID. The fields given are set (an empty value
clears one); those not given keep what the subscriber had.`,
		example: `  herald subscribers set u-olga --tenant acme --email olga@zarya.example --locale ru --timezone Europe/Moscow
  herald subscribers set u-olga --tenant acme --phone '' --data '{"desk": 4}'`,
		args: cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) {
			for _, f := range subscriberFlags {
				cmd.Flags().String(f.name, "", f.usage)
			}
		},
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			created := false
			_, err := d.Subscribers.Patch(ctx, recipient.SubscriberKey(tenant, id), func(s *recipient.Subscriber, found bool) (resource.Write, error) {
				created = !found
				*s = withFlags(cmd, *s)
				s.Tenant, s.ID, s.UpdatedAt = tenant, id, time.Now().UTC()
				*s = s.Normalize()
				return resource.Save, s.Validate()
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s subscriber %q for tenant %s\n", map[bool]string{true: "created", false: "updated"}[created], id, tenant)
			return nil
		},
	})
}

// withFlags is s with the fields the command line gives.
func withFlags(cmd *cobra.Command, s recipient.Subscriber) recipient.Subscriber {
	fields := map[string]*string{"name": &s.Name, "email": &s.Email, "phone": &s.Phone, "whatsapp": &s.WhatsApp,
		"locale": &s.Locale, "timezone": &s.Timezone}
	for name, field := range fields {
		if cmd.Flags().Changed(name) {
			*field, _ = cmd.Flags().GetString(name)
		}
	}
	if cmd.Flags().Changed("data") {
		data, _ := cmd.Flags().GetString("data")
		s.Data = json.RawMessage(data)
	}
	return s
}

func subscribersGetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "get ID --tenant T [--json]", short: "Show a subscriber",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			s, _, err := d.Subscribers.Get(ctx, recipient.SubscriberKey(tenant, id))
			if err != nil {
				return fmt.Errorf("tenant %s, subscriber %q: %w", tenant, id, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(s)
			}
			w := newTable(cmd.OutOrStdout(), "FIELD", "VALUE")
			for _, row := range [][2]string{{"id", s.ID}, {"name", s.Name}, {"email", s.Email}, {"phone", s.Phone},
				{"whatsapp", s.WhatsApp}, {"locale", s.Locale}, {"timezone", s.Timezone}, {"data", string(s.Data)},
				{"updated", s.UpdatedAt.Format(time.RFC3339)}} {
				w.row(row[0], dash(row[1]))
			}
			return w.flush()
		},
	})
}

func subscribersImportCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use:   "import FILE.ndjson --tenant T [--json]",
		short: "Create or replace subscribers from NDJSON, one a line",
		long: fmt.Sprintf(`Each line is a subscriber as the API's PUT takes it, with its "id":
  {"id":"u-olga","email":"olga@zarya.example","locale":"ru","timezone":"Europe/Moscow"}
Each line is stored or refused on its own; the refused ones are listed with
why, naming the field. A file of any length is imported %d lines at a time.
"-" reads standard input.`, recipient.MaxImport),
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print every line's outcome as JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, file string) error {
			body, err := readInput(cmd, file)
			if err != nil {
				return err
			}
			rep, err := importChunks(ctx, cmd, d.Directory, tenant, body)
			if err != nil {
				return err
			}
			return printImport(cmd, file, rep)
		},
	})
}

// readInput is the file named, or standard input for "-".
func readInput(cmd *cobra.Command, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	return os.ReadFile(file)
}

// importChunks imports body recipient.MaxImport lines at a time, with a
// progress bar, numbering lines as the file does.
func importChunks(ctx context.Context, cmd *cobra.Command, d *recipient.Directory, tenant string, body []byte) (recipient.ImportReport, error) {
	lines := bytes.SplitAfter(body, []byte("\n"))
	total := recipient.ImportReport{Tenant: tenant, Lines: []recipient.ImportedLine{}}
	b := progressBar(cmd, "importing subscribers")
	defer b.finish()
	for start := 0; start < len(lines); start += recipient.MaxImport {
		chunk := bytes.Join(lines[start:min(start+recipient.MaxImport, len(lines))], nil)
		rep, err := d.Import(ctx, tenant, chunk, func(line int) { b.progress(start+line, len(lines)) })
		for _, l := range rep.Lines {
			l.Line += start
			total.Lines = append(total.Lines, l)
		}
		total.Created, total.Updated, total.Refused = total.Created+rep.Created, total.Updated+rep.Updated, total.Refused+rep.Refused
		if err != nil {
			return total, fmt.Errorf("importing lines from %d: %w (the lines before are stored)", start+1, err)
		}
	}
	return total, nil
}

func printImport(cmd *cobra.Command, file string, rep recipient.ImportReport) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "imported %s for tenant %s: %d created, %d updated, %d refused\n", file, rep.Tenant, rep.Created, rep.Updated, rep.Refused)
	for _, l := range rep.Lines {
		if l.Outcome == recipient.Refused {
			fmt.Fprintf(out, "line %d %q: %s\n", l.Line, l.ID, l.Error)
		}
	}
	return nil
}
