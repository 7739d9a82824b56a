package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/shared/vault"
	"github.com/heraldhq/herald/shared/webhooks"
)

func vaultCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vault",
		Short: "Manage the master key that seals tenants' provider credentials and webhook signing secrets",
	}
	cmd.AddCommand(vaultRotateCommand())
	return cmd
}

func vaultRotateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate --new-key-file F",
		Short: "Re-encrypt every stored credential and webhook signing secret under a new master key",
		Long: `Re-encrypt every credential in the KV bucket credentials, and every webhook
signing secret in the KV bucket webhook_endpoints, of every tenant, under the
key in --new-key-file. The current key (HERALD_MASTER_KEY or
--master-key-file) and any --previous-key-file still decrypt meanwhile.
The earlier revisions the buckets keep go too: once it has finished, no
revision of any key holds anything sealed under the old key.

Before: run the services with the new key as their master key and the old
one in vault.previous_key_files, so they read both. After: drop the old key.
Interrupted, nothing is lost; run it again to finish.

Make a new key, readable by its owner only, with:
  (umask 077; openssl rand -base64 32 > new.key)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, _ := cmd.Flags().GetString("new-key-file")
			next, err := vault.ReadKeyFile(path)
			if err != nil {
				return fmt.Errorf("--new-key-file: %w", err)
			}
			old, err := cliKeyring(cmd)
			if err != nil {
				return err
			}
			if old.Current().ID() == next.ID() {
				return fmt.Errorf("--new-key-file holds the current master key (%s) already: give a new key", next.ID())
			}
			to, err := old.WithCurrent(next)
			if err != nil {
				return err
			}
			return withNATS(cmd, func(ctx context.Context, _ app.Config, js jetstream.JetStream) error {
				creds, err := vault.Open(ctx, js, to)
				if err != nil {
					return err
				}
				hooks, err := webhooks.Open(ctx, js, to)
				if err != nil {
					return err
				}
				return rotate(ctx, cmd, creds, hooks, to, old)
			})
		},
	}
	cmd.Flags().String("new-key-file", "", "file holding the new master key (base64 of 32 bytes, or 32 raw bytes) (required)")
	cmd.Flags().StringArray("previous-key-file", nil, "a key some credentials may still be sealed under, from an earlier rotation (repeatable)")
	_ = cmd.MarkFlagRequired("new-key-file")
	masterKeyFlag(cmd)
	return cmd
}

// rotate runs the rotation with a progress bar — the credentials, then the
// webhook signing secrets, both sealed under the master key — then says what
// it did and whether the old keys may go.
func rotate(ctx context.Context, cmd *cobra.Command, creds *vault.Store, hooks *webhooks.Store, to, old *vault.Keyring) error {
	out := cmd.OutOrStdout()
	bar := progressBar(cmd, "re-encrypting credentials")
	r, credErr := vault.Rotate(ctx, creds, to, bar.progress)
	bar.finish()
	fmt.Fprintf(out, "re-encrypted %s of %s credentials under key %s (%s were under it already)\n",
		thousands(r.Resealed), thousands(r.Total), to.Current().ID(), thousands(r.Current))

	bar = progressBar(cmd, "re-encrypting webhook signing secrets")
	w, hookErr := webhooks.Reseal(ctx, hooks, to, bar.progress)
	bar.finish()
	fmt.Fprintf(out, "re-encrypted %s of %s webhook signing secrets under key %s (%s were under it already",
		thousands(w.Resealed), thousands(w.Total), to.Current().ID(), thousands(w.Current))
	if w.Dropped > 0 {
		fmt.Fprintf(out, "; %s past their grace period removed", thousands(w.Dropped))
	}
	fmt.Fprintln(out, ")")

	if err := errors.Join(credErr, hookErr); err != nil {
		return fmt.Errorf("%w\nsome secrets are still sealed under an old key: keep it, and run the rotation again", err)
	}
	fmt.Fprintf(out, "every credential and signing secret is sealed under key %s: key %v may go once no service holds it any more\n",
		to.Current().ID(), old.IDs())
	return nil
}

// bar is a progress bar on stderr, of a size learnt as it goes.
type bar struct{ *progressbar.ProgressBar }

func progressBar(cmd *cobra.Command, description string) bar {
	return bar{progressbar.NewOptions(-1, progressbar.OptionSetDescription(description),
		progressbar.OptionSetWriter(cmd.ErrOrStderr()), progressbar.OptionShowCount(),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())}
}

func (b bar) progress(done, total int) {
	b.ChangeMax(total)
	_ = b.Set(done)
}

func (b bar) finish() { _ = b.Finish() }

// devKeyFile is the key a `herald dev` run from the working directory with
// its default --data keeps, for a command given no key, saying so on
// stderr; "" when there is none. A newcomer's commands beside dev then need
// no key of their own, and outside dev nothing changes: no file, no key.
func devKeyFile(cmd *cobra.Command, env string) string {
	return devFile(cmd, app.DevMasterKeyFile(app.DevDataDir), "no "+env+" or --master-key-file: using herald dev's master key")
}

// devFile is path if it exists, noting on stderr that it is used (the
// file's name, never its content); "" when it does not.
func devFile(cmd *cobra.Command, path, note string) string {
	if _, err := os.Stat(path); err != nil {
		return ""
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s, %s\n", note, path)
	return path
}

// masterKeyFlag adds --master-key-file, the CLI's way to the master key
// besides HERALD_MASTER_KEY.
func masterKeyFlag(cmd *cobra.Command) {
	cmd.Flags().String("master-key-file", "", "file holding the master key (default: the variable HERALD_MASTER_KEY, else herald dev's .herald/master.key in the working directory)")
}

// cliKeyring loads the master key the config file's vault: section names —
// --master-key-file over it, else its variable (HERALD_MASTER_KEY) — with
// the --previous-key-file keys if the command has that flag.
func cliKeyring(cmd *cobra.Command) (*vault.Keyring, error) {
	loaded, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	cfg := loaded.Vault
	if f, _ := cmd.Flags().GetString("master-key-file"); f != "" {
		cfg.MasterKeyFile = f
	}
	if cmd.Flags().Lookup("previous-key-file") != nil {
		if files, _ := cmd.Flags().GetStringArray("previous-key-file"); len(files) > 0 {
			cfg.PreviousKeyFiles = files
		}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MasterKeyFile == "" && loaded.Getenv(cfg.MasterKeyEnv) == "" {
		cfg.MasterKeyFile = devKeyFile(cmd, cfg.MasterKeyEnv)
	}
	keys, err := vault.LoadKeyring(cfg, loaded.Getenv)
	if errors.Is(err, vault.ErrNoKey) {
		return nil, fmt.Errorf("%w: set %s (base64 of 32 bytes) or --master-key-file", err, cfg.MasterKeyEnv)
	}
	return keys, err
}
