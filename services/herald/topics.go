package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/shared/recipient"
	"github.com/heraldhq/herald/shared/resource"
)

// maxTopicMembers is the bound the CLI holds a topic to, the API's
// default (api.Config.MaxTopicMembers).
const maxTopicMembers = 100_000

func topicsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Set, show, list and remove tenants' topics, and their subscribers",
		Long: `A topic is a named list of a tenant's subscribers, for fan-out: an event naming
the topic reaches every member. Its members are subscribers only.`,
	}
	cmd.AddCommand(topicsSetCommand(), topicsGetCommand(), topicsListCommand(), topicsDeleteCommand(),
		topicsChangeCommand("add", "Add subscribers to a topic"), topicsChangeCommand("remove", "Remove subscribers from a topic"),
		topicsMembersCommand())
	return cmd
}

func topicsSetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "set ID --tenant T [--name N]", short: "Create or rename a topic (its members stay)",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().String("name", "", "the topic's name") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			name, _ := cmd.Flags().GetString("name")
			t := recipient.Topic{Tenant: tenant, ID: id, Name: name, UpdatedAt: time.Now().UTC()}.Normalize()
			if _, err := d.Topics.Put(ctx, t); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stored topic %q for tenant %s\n", id, tenant)
			return nil
		},
	})
}

func topicsGetCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "get ID --tenant T [--json]", short: "Show a topic",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			t, _, err := d.Topics.Get(ctx, recipient.TopicKey(tenant, id))
			if err != nil {
				return fmt.Errorf("tenant %s, topic %q: %w", tenant, id, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(t)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s), updated %s\n", t.ID, dash(t.Name), t.UpdatedAt.Format(time.RFC3339))
			return nil
		},
	})
}

func topicsListCommand() *cobra.Command {
	return listCommand(recipientCommands, "List a tenant's topics, by id",
		func(d recipients, ctx context.Context, tenant string) ([]recipient.Topic, error) {
			all, err := d.Topics.All(ctx, tenant)
			slices.SortFunc(all, func(a, b recipient.Topic) int { return strings.Compare(a.ID, b.ID) })
			return all, err
		},
		[]any{"ID", "NAME"}, func(t recipient.Topic) []any { return []any{t.ID, dash(t.Name)} })
}

func topicsDeleteCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "delete ID --tenant T", short: "Remove a topic and its memberships (its subscribers stay)",
		args: cobra.ExactArgs(1),
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, id string) error {
			if err := d.DeleteTopic(ctx, tenant, id); err != nil {
				return fmt.Errorf("tenant %s, topic %q: %w", tenant, id, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed topic %q of tenant %s\n", id, tenant)
			return nil
		},
	})
}

// topicsChangeCommand makes `add` or `remove`: TOPIC, then subscribers.
func topicsChangeCommand(verb, short string) *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: verb + " TOPIC ID… --tenant T", short: short,
		example: fmt.Sprintf("  herald topics %s warehouse-sevilla u-olga u-ivan --tenant acme", verb),
		args:    cobra.MinimumNArgs(2),
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, topic string) error {
			ids := cmd.Flags().Args()[1:]
			var add, remove []string
			if verb == "add" {
				add = ids
			} else {
				remove = ids
			}
			c, err := d.ChangeMembers(ctx, tenant, topic, add, remove, maxTopicMembers)
			if err != nil {
				return fmt.Errorf("tenant %s, topic %q: %w", tenant, topic, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "topic %q of tenant %s: %d added, %d removed, %d members\n", topic, tenant, c.Added, c.Removed, c.Members)
			return nil
		},
	})
}

func topicsMembersCommand() *cobra.Command {
	return recipientCommands.command(resourceCommand[recipients]{
		use: "members TOPIC --tenant T [--json]", short: "List a topic's subscribers",
		args:  cobra.ExactArgs(1),
		flags: func(cmd *cobra.Command) { cmd.Flags().Bool("json", false, "print JSON") },
		run: func(cmd *cobra.Command, ctx context.Context, d recipients, tenant, topic string) error {
			members, err := allMembers(ctx, d.Directory, tenant, topic)
			if err != nil {
				return fmt.Errorf("tenant %s, topic %q: %w", tenant, topic, err)
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(members)
			}
			w := newTable(cmd.OutOrStdout(), "SUBSCRIBER", "ADDED")
			for _, m := range members {
				w.row(m.Subscriber, m.AddedAt.Format(time.RFC3339))
			}
			return w.flush()
		},
	})
}

// allMembers are the topic's members, read a page at a time.
func allMembers(ctx context.Context, d *recipient.Directory, tenant, topic string) ([]recipient.Membership, error) {
	out := []recipient.Membership{}
	p := resource.Page{Limit: resource.MaxLimit}
	for {
		page, next, err := d.Members(ctx, tenant, topic, p)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		p.After = next
	}
}
