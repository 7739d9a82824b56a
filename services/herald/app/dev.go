package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/heraldhq/herald/services/delivery/push/webpush"

	"github.com/heraldhq/herald/shared/embedded"
	"github.com/heraldhq/herald/shared/tenant"
	"github.com/heraldhq/herald/shared/vault"
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
	// HookListen is the address of the webhook sink, which writes each
	// delivery posted to /hook under DataDir/hooks (Dev.HookURL says where
	// it is), and of the push sink, which writes each push to its
	// subscription under DataDir/push (Dev.PushSubscription). Defaults to
	// a free loopback port; herald dev's --hook-listen is 127.0.0.1:8082.
	HookListen string
	// Config is the same configuration production uses. Without email
	// providers, mail goes to the mail-directory sink under DataDir/mail.
	Config Config
}

// DevDataDir is dev's data directory unless told otherwise.
const DevDataDir = ".herald"

// DevMasterKeyFile is where dev keeps the vault's master key under its data
// directory: the CLI, run beside it, finds the key there.
func DevMasterKeyFile(dataDir string) string { return filepath.Join(dataDir, "master.key") }

// DevLinkKeyFile is where dev keeps the link secret under its data
// directory: the CLI, run beside it, finds it there to erase subscribers.
func DevLinkKeyFile(dataDir string) string { return filepath.Join(dataDir, "link.key") }

// Dev is a running development environment.
type Dev struct {
	App     *App
	NATS    *embedded.NATS
	Redis   *embedded.Redis // nil when RedisURL was given
	MailDir string          // where the sink writes, or "" with configured providers
	TextDir string          // where SMS and WhatsApp messages are written, or "" with configured providers
	// HookURL is the webhook sink's endpoint, to register as a tenant's;
	// HookDir is where it writes what it receives.
	HookURL string
	HookDir string
	// PushDir is where the push sink writes each push it receives, as the
	// JSON a service worker gets; PushSubscription is the file holding its
	// subscription, the body of a device's PUT.
	PushDir          string
	PushSubscription string
	// MasterKey is the vault's master key file dev made or found under
	// DataDir, or "" when one was configured.
	MasterKey string
	// VAPIDPublicKey is the Web Push application server key pages
	// subscribe with: dev's own pair's, or the configured one.
	VAPIDPublicKey string
	DataDir        string
	hooks          *http.Server
}

// StartDev starts embedded NATS (JetStream on disk) and, unless a Redis URL
// is given, an embedded Redis; then runs every service against them.
func StartDev(ctx context.Context, cfg DevConfig, logger *slog.Logger) (_ *Dev, err error) {
	dir, err := filepath.Abs(cmp.Or(cfg.DataDir, DevDataDir))
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
	d.useSinks(&c)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return d, err
	}
	if err := useDevLinkSecret(&c, dir); err != nil {
		return d, err
	}
	c.History.URL = cmp.Or(c.History.URL, "sqlite:"+filepath.Join(dir, "history.db"))
	if d.MasterKey, err = devMasterKey(&c, dir); err != nil {
		return d, err
	}
	if err := useDevVAPIDKeys(&c, dir); err != nil {
		return d, err
	}
	d.VAPIDPublicKey = c.Push.WebPush.VAPIDPublicKey
	d.NATS, err = embedded.StartNATS(embedded.NATSConfig{
		Listen:   cmp.Or(cfg.NATSListen, "127.0.0.1:4222"),
		StoreDir: filepath.Join(dir, "nats"),
		Logger:   logger.With("component", "nats-server"),
	})
	if err != nil {
		return d, fmt.Errorf("%w (is another herald dev or nats-server running? choose another port with --nats-listen)", err)
	}
	if err := d.startHookSink(cfg.HookListen, c.Push.WebPush.VAPIDPublicKey, logger); err != nil {
		return d, err
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
	d.App.beforeServices = d.App.registerSample
	d.App.dev = true
	return d, d.App.Start(ctx)
}

// useSinks points every channel the configuration names no provider for
// at a local sink under DataDir, and lets webhooks reach this machine.
func (d *Dev) useSinks(c *Config) {
	if len(c.Email.Providers) == 0 {
		d.MailDir = filepath.Join(d.DataDir, "mail")
		c.Email.Providers = []ProviderConfig{{Type: "maildir", Dir: d.MailDir}}
	}
	c.Email.From = cmp.Or(c.Email.From, "Herald Dev <herald@localhost>")
	// Webhook endpoints on this machine are what development is about,
	// the sink's first.
	c.Webhooks.AllowPrivateNetworks = true
	for _, section := range []*TextConfig{&c.SMS, &c.WhatsApp.TextConfig} {
		if len(section.Providers) == 0 {
			d.TextDir = filepath.Join(d.DataDir, "sms")
			section.Providers = []ProviderConfig{{Type: "textdir", Dir: d.TextDir}}
		}
	}
}

// useDevLinkSecret makes document, unsubscribe and preference links work
// out of the box in dev, unless the configuration names a link secret:
// signed by DataDir/link.key, made on first use, so that links in mail
// from an earlier run still work and the CLI beside dev erases with it.
func useDevLinkSecret(c *Config, dir string) error {
	if c.Documents.LinkSecretEnv != "" || c.Documents.LinkSecretFile != "" {
		return nil
	}
	path := DevLinkKeyFile(dir)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
	case err != nil:
		return fmt.Errorf("dev link secret: %w", err)
	default:
		_, err = f.WriteString(rand.Text() + rand.Text() + "\n")
		if err = errors.Join(err, f.Close()); err != nil {
			return fmt.Errorf("dev link secret: writing %s: %w", path, err)
		}
	}
	c.Documents.LinkSecretFile = path
	return nil
}

// startHookSink serves the webhook sink, writing under DataDir/hooks, and
// beside it the push sink for pushes signed by vapidPublicKey, writing
// under DataDir/push.
func (d *Dev) startHookSink(listen, vapidPublicKey string, logger *slog.Logger) error {
	d.HookDir = filepath.Join(d.DataDir, "hooks")
	push, err := newPushSink(d.DataDir, vapidPublicKey, logger.With("component", "push-sink"))
	if err != nil {
		return err
	}
	srv, addr, err := startHookSink(cmp.Or(listen, "127.0.0.1:0"), d.HookDir, push, logger.With("component", "webhook-sink"))
	if err != nil {
		return err
	}
	base := "http://" + addr.String()
	d.hooks, d.HookURL = srv, base+HookPath
	d.PushDir, d.PushSubscription = push.dir, push.SubscriptionFile()
	return push.writeSubscription(base)
}

// SampleTenant is the tenant of the sample events (examples/events), which
// dev registers so that they are routed.
const SampleTenant = "acme"

// registerSample registers the sample tenant, unless it is already (a dev
// store reused from an earlier run), on the enterprise plan: no rate or
// quota holds a developer's load back (herald tenants set acme --plan free
// shows them).
func (a *App) registerSample(ctx context.Context) error {
	reg, err := tenant.Open(ctx, a.js, a.cfg.Plans)
	if err != nil {
		return err
	}
	_, err = reg.Create(ctx, tenant.Tenant{ID: SampleTenant, Name: "Acme (sample tenant)", Plan: "enterprise"})
	if errors.Is(err, tenant.ErrExists) {
		return nil
	}
	return err
}

// devMasterKey points vault.master_key_file at DataDir/master.key, made on
// first use, unless a master key is configured; it returns the file used.
func devMasterKey(c *Config, dir string) (string, error) {
	if env := c.Vault.WithDefaults().MasterKeyEnv; c.Vault.MasterKeyFile != "" || (c.Getenv != nil && c.Getenv(env) != "") {
		return c.Vault.MasterKeyFile, nil
	}
	path := DevMasterKeyFile(dir)
	if _, err := vault.ReadKeyFile(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := vault.GenerateKeyFile(path); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	c.Vault.MasterKeyFile = path
	return path, nil
}

// DevVAPIDKeyFiles are where dev keeps its Web Push key pair under its
// data directory: the private half (0600) and the public one.
func DevVAPIDKeyFiles(dataDir string) (private, public string) {
	return filepath.Join(dataDir, "vapid.key"), filepath.Join(dataDir, "vapid.pub")
}

// useDevVAPIDKeys configures push.webpush with DataDir's VAPID pair, made
// on first use, unless push.webpush is configured: browsers subscribed in
// an earlier run stay subscribed, since a subscription is bound to the
// public key it was made with.
func useDevVAPIDKeys(c *Config, dir string) error {
	if c.Push.WebPush != nil {
		return nil
	}
	privatePath, publicPath := DevVAPIDKeyFiles(dir)
	public, err := os.ReadFile(publicPath)
	if errors.Is(err, fs.ErrNotExist) {
		public, err = makeVAPIDKeys(privatePath, publicPath)
	}
	if err != nil {
		return fmt.Errorf("dev VAPID keys: %w", err)
	}
	c.Push.WebPush = &WebPushConfig{VAPIDPublicKey: strings.TrimSpace(string(public)), VAPIDPrivateKeyFile: privatePath,
		Contact: "mailto:dev@localhost"}
	return nil
}

// makeVAPIDKeys writes a new pair, the private half first and 0600, so a
// public key on disk always has its private half beside it.
func makeVAPIDKeys(privatePath, publicPath string) ([]byte, error) {
	private, public, err := webpush.GenerateVAPIDKeys()
	if err != nil {
		return nil, err
	}
	if err := writeNew(privatePath, private, 0o600); err != nil {
		return nil, err
	}
	return []byte(public), writeNew(publicPath, public, 0o644)
}

// writeNew writes a file that must not exist yet, or replaces an earlier
// run's leftover that never got its public half.
func writeNew(path, content string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content + "\n")
	if err = errors.Join(err, f.Close()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Stop drains the services, then stops the embedded servers.
func (d *Dev) Stop(ctx context.Context) error {
	var errs []error
	if d.App != nil {
		errs = append(errs, d.App.Stop(ctx))
	}
	// After the app: its last webhook deliveries land.
	errs = append(errs, stopHookSink(ctx, d.hooks))
	if d.NATS != nil {
		d.NATS.Shutdown()
	}
	if d.Redis != nil {
		d.Redis.Close()
	}
	return errors.Join(errs...)
}
