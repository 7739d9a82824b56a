// Package telemetry sets up a process's metrics: an OpenTelemetry meter
// provider whose instruments are exported for Prometheus on /metrics.
//
// Each Telemetry has its own registry, so several pipelines in one test
// process do not share counters.
package telemetry

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Telemetry owns a meter provider and the registry /metrics serves.
type Telemetry struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
}

// New creates a meter provider exporting to a fresh Prometheus registry,
// which also carries the Go runtime and process collectors.
func New() (*Telemetry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, err
	}
	return &Telemetry{provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)), registry: reg}, nil
}

// MeterProvider is what services create their instruments from.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.provider }

// Handler serves the Prometheus text format.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{})
}

// Shutdown stops the meter provider.
func (t *Telemetry) Shutdown(ctx context.Context) error { return t.provider.Shutdown(ctx) }
