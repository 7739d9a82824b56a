package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/heraldhq/herald/shared/embedded"
)

// DevConfig configures `herald dev`: the whole pipeline in one process.
type DevConfig struct {
	// DataDir holds JetStream's store (nats/) and the mail sink (mail/).
	// Defaults to ./.herald.
	DataDir string
	// NATSListen is the embedded NATS server's client address.
	// Defaults to 127.0.0.1:4222.
	NATSListen string
	// RedisURL points at an existing Redis; when empty an embedded
	// Redis-protocol server is started on a free loopback port.
	RedisURL string
	// Config is the same configuration production uses. Without email
	// providers, mail goes to the mail-directory sink under DataDir/mail.
	Config Config
}

// devLinkSecret names the generated key that signs dev's document links.
const devLinkSecret = "HERALD_DEV_LINK_SECRET"

// Dev is a running development environment.
type Dev struct {
	App     *App
	NATS    *embedded.NATS
	Redis   *embedded.Redis // nil when RedisURL was given
	MailDir string          // where the sink writes, or "" with configured providers
	DataDir string
}

// StartDev starts embedded NATS (JetStream on disk) and, unless a Redis URL
// is given, an embedded Redis; then runs every service against them.
func StartDev(ctx context.Context, cfg DevConfig, logger *slog.Logger) (_ *Dev, err error) {
	dir, err := filepath.Abs(cmp.Or(cfg.DataDir, ".herald"))
	if err != nil {
		return nil, err
	}
	d := &Dev{DataDir: dir}
	defer func() {
		if err != nil {
			_ = d.Stop(context.WithoutCancel(ctx))
		}
	}()
	c := cfg.Config
	if len(c.Email.Providers) == 0 {
		d.MailDir = filepath.Join(dir, "mail")
		c.Email.Providers = []ProviderConfig{{Type: "maildir", Dir: d.MailDir}}
	}
	c.Email.From = cmp.Or(c.Email.From, "Herald Dev <herald@localhost>")
	if c.Documents.LinkSecretEnv == "" && c.Documents.LinkSecretFile == "" {
		// Links work out of the box in dev: a fresh key each run.
		c.Documents.LinkSecretEnv = devLinkSecret
		getenv, key := c.Getenv, rand.Text()+rand.Text()
		c.Getenv = func(name string) string {
			if name == devLinkSecret {
				return key
			}
			if getenv == nil {
				return ""
			}
			return getenv(name)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return d, err
	}
	d.NATS, err = embedded.StartNATS(embedded.NATSConfig{
		Listen:   cmp.Or(cfg.NATSListen, "127.0.0.1:4222"),
		StoreDir: filepath.Join(dir, "nats"),
		Logger:   logger.With("component", "nats-server"),
	})
	if err != nil {
		return d, fmt.Errorf("%w (is another herald dev or nats-server running? choose another port with --nats-listen)", err)
	}
	c.NATS.URL = d.NATS.URL()
	c.Redis.URL = cfg.RedisURL
	if cfg.RedisURL == "" {
		if d.Redis, err = embedded.StartRedis("127.0.0.1:0"); err != nil {
			return d, err
		}
		c.Redis.URL = d.Redis.URL()
	}
	if d.App, err = New(c, logger); err != nil {
		return d, err
	}
	return d, d.App.Start(ctx)
}

// Stop drains the services, then stops the embedded servers.
func (d *Dev) Stop(ctx context.Context) error {
	var errs []error
	if d.App != nil {
		errs = append(errs, d.App.Stop(ctx))
	}
	if d.NATS != nil {
		d.NATS.Shutdown()
	}
	if d.Redis != nil {
		d.Redis.Close()
	}
	return errors.Join(errs...)
}
