package embedded

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATSConfig configures an embedded nats-server.
type NATSConfig struct {
	// Listen is the client address. Port 0 picks a free port.
	// Defaults to 127.0.0.1:0.
	Listen string
	// StoreDir is where JetStream keeps its data. Required.
	StoreDir string
	// ServerName names the server in advisories and `nats server` output.
	// Defaults to "herald".
	ServerName string
	// Logger receives the server's log, notices at debug level.
	// Defaults to discarding it.
	Logger *slog.Logger
	// Cluster joins the server to a JetStream cluster. Defaults to none.
	Cluster *ClusterConfig
	// Options edits the server's options last, before it starts: users
	// and their permissions, say. Defaults to none.
	Options func(*server.Options)
}

// ClusterConfig makes an embedded server one node of a cluster.
type ClusterConfig struct {
	// Name of the cluster; every node uses the same.
	Name string
	// Listen is the route address, host:port; the port must be fixed so
	// that a restarted node is found again.
	Listen string
	// Routes are the other nodes' route addresses.
	Routes []string
}

// NATS is a running embedded nats-server with JetStream.
type NATS struct {
	srv *server.Server
}

// StartNATS starts a nats-server and waits until it accepts clients.
func StartNATS(cfg NATSConfig) (*NATS, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded nats: StoreDir is required")
	}
	host, port, err := splitListen(cmp.Or(cfg.Listen, "127.0.0.1:0"))
	if err != nil {
		return nil, fmt.Errorf("embedded nats: listen: %w", err)
	}
	opts := &server.Options{
		ServerName: cmp.Or(cfg.ServerName, "herald"),
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true,
	}
	if err := cluster(opts, cfg.Cluster); err != nil {
		return nil, fmt.Errorf("embedded nats: cluster: %w", err)
	}
	if cfg.Options != nil {
		cfg.Options(opts)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.SetLoggerV2(slogAdapter{cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}, false, false, false)
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready to accept clients on %s within 10s", cfg.Listen)
	}
	return &NATS{srv: srv}, nil
}

// URL is the client URL, e.g. nats://127.0.0.1:4222.
func (n *NATS) URL() string { return n.srv.ClientURL() }

// Shutdown stops the server and waits until it has flushed its stores.
func (n *NATS) Shutdown() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

func cluster(opts *server.Options, c *ClusterConfig) error {
	if c == nil {
		return nil
	}
	host, port, err := splitListen(c.Listen)
	if err != nil {
		return err
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port}
	for _, r := range c.Routes {
		u, err := url.Parse("nats-route://" + r)
		if err != nil {
			return err
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// splitListen parses host:port, mapping port 0 to the server's "random".
func splitListen(listen string) (string, int, error) {
	host, p, err := net.SplitHostPort(listen)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: port must be 0-65535", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// slogAdapter routes the server's log lines into slog. Notices are the
// server's chatter (banner, config) and go to debug.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Noticef(f string, v ...any) {
	a.l.Debug(fmt.Sprintf(f, v...), "component", "nats-server")
}
func (a slogAdapter) Warnf(f string, v ...any) {
	a.l.Warn(fmt.Sprintf(f, v...), "component", "nats-server")
}
func (a slogAdapter) Fatalf(f string, v ...any) {
	a.l.Error(fmt.Sprintf(f, v...), "component", "nats-server")
}
func (a slogAdapter) Errorf(f string, v ...any) {
	a.l.Error(fmt.Sprintf(f, v...), "component", "nats-server")
}
func (a slogAdapter) Debugf(f string, v ...any) {
	a.l.Debug(fmt.Sprintf(f, v...), "component", "nats-server")
}
func (a slogAdapter) Tracef(f string, v ...any) {
	a.l.Debug(fmt.Sprintf(f, v...), "component", "nats-server")
}

// Name is the server's name, as stream and consumer leaders are reported.
func (n *NATS) Name() string { return n.srv.Name() }
