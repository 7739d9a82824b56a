package delivery

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"strings"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/heraldhq/herald/services/delivery/email"
)

// Provider is an email provider with the name it is known by in logs,
// metrics and the ledger.
type Provider struct {
	Name string
	email.Provider
}

// Config configures email delivery.
type Config struct {
	// From is the From header of every email, "Name <address>". Required.
	From string
	// Providers are tried in order on every try, stopping at the first that
	// accepts the message. Required.
	Providers []Provider
	// Concurrency is how many emails are sent at once per priority.
	// Defaults to 8.
	Concurrency int
	// RetryDelay is how long a delivery waits after its first failed try;
	// it doubles with each further delivery, up to five minutes.
	// Defaults to 2s.
	RetryDelay time.Duration

	// Logger defaults to discarding.
	Logger *slog.Logger
	// MeterProvider defaults to a no-op provider.
	MeterProvider metric.MeterProvider
}

// WithDefaults returns the config with every unset field filled in.
func (c Config) WithDefaults() Config {
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.RetryDelay = cmp.Or(c.RetryDelay, 2*time.Second)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.MeterProvider == nil {
		c.MeterProvider = noop.NewMeterProvider()
	}
	return c
}

// Validate reports every problem, naming fields as in the YAML file.
func (c Config) Validate() error {
	var problems []string
	if _, err := netmail.ParseAddress(c.From); err != nil {
		problems = append(problems, fmt.Sprintf("email.from: %q is not an address such as \"Orders <orders@example.com>\": %v", c.From, err))
	}
	if len(c.Providers) == 0 {
		problems = append(problems, "email.providers: at least one provider is required")
	}
	for i, p := range c.Providers {
		if p.Name == "" || p.Provider == nil {
			problems = append(problems, fmt.Sprintf("email.providers[%d]: provider is not set up", i))
		}
	}
	if c.Concurrency < 1 {
		problems = append(problems, fmt.Sprintf("email.concurrency: must be 1 or more (got %d)", c.Concurrency))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}
