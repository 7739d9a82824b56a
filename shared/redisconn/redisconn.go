// Package redisconn opens Redis in the forms deployments have it: one
// server (redis://, rediss:// with TLS, unix://), a master watched by
// Sentinel (redis+sentinel://), or a Redis Cluster (redis+cluster://), as
// one go-redis UniversalClient that every Herald user of Redis (the lease,
// the rate limiter) takes.
//
//	redis://[:password@]host:6379[/db]
//	rediss://[:password@]host:6380[/db]                       TLS (see TLS for CA and client certificates)
//	redis+sentinel://[:password@]s1:26379,s2:26379/mymaster[/db][?sentinel_password=…]
//	redis+cluster://[:password@]n1:6379,n2:6379,n3:6379
//
// The password in a Sentinel URL is the master's (what clients are given);
// the sentinels' own, if they have one, is sentinel_password. Other query
// parameters are go-redis's options (dial_timeout, pool_size…).
package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Kind is which form a URL names.
type Kind string

const (
	Single   Kind = "single"
	Sentinel Kind = "sentinel"
	Cluster  Kind = "cluster"
)

// TLS are the files a rediss URL may need: a CA for a server certificate
// no system root signs, and a client certificate for servers that ask.
type TLS struct {
	// CAFile is a PEM file of the CA that signed the server's
	// certificate. Defaults to the system's roots.
	CAFile string `yaml:"ca_file"`
	// CertFile is a PEM file of the client certificate, for a server
	// that asks for one; KeyFile holds its key. Defaults to none.
	CertFile string `yaml:"cert_file"`
	// KeyFile is a PEM file of CertFile's private key.
	KeyFile string `yaml:"key_file"`
}

// Accepted names the forms, for errors.
const Accepted = "redis://, rediss://, unix://, redis+sentinel:// (rediss+sentinel://) or redis+cluster:// (rediss+cluster://)"

// Check reports whether raw has a form Open takes, without connecting.
func Check(raw string) (Kind, error) {
	u, err := parse(raw)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
		return Single, nil
	case "redis+sentinel", "rediss+sentinel":
		if master, _, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/"); master == "" {
			return "", errors.New("a sentinel URL names the master: redis+sentinel://host:26379,host2:26379/mymaster")
		}
		return Sentinel, nil
	case "redis+cluster", "rediss+cluster":
		return Cluster, nil
	}
	return "", fmt.Errorf("scheme %q is not one of %s", u.Scheme, Accepted)
}

func parse(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL") // not quoted: it may hold a password
	}
	return u, nil
}

// Open makes the client raw names. It does not connect: the first command
// does.
func Open(raw string, files TLS) (redis.UniversalClient, Kind, error) {
	kind, err := Check(raw)
	if err != nil {
		return nil, "", err
	}
	u, _ := parse(raw)
	secure := strings.HasPrefix(u.Scheme, "rediss")
	var tlsConfig *tls.Config
	if secure {
		if tlsConfig, err = files.config(u.Hostname()); err != nil {
			return nil, "", err
		}
	}
	switch kind {
	case Sentinel:
		o, err := failoverOptions(u)
		if err != nil {
			return nil, "", err
		}
		o.TLSConfig = tlsConfig
		return redis.NewFailoverClient(o), kind, nil
	case Cluster:
		o, err := clusterOptions(u)
		if err != nil {
			return nil, "", err
		}
		o.TLSConfig = tlsConfig
		return redis.NewClusterClient(o), kind, nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, "", err
	}
	if secure {
		o.TLSConfig = tlsConfig
	}
	return redis.NewClient(o), kind, nil
}

// failoverOptions reads redis+sentinel://[:pw@]s1,s2/master[/db]?… through
// go-redis's own failover URL form.
func failoverOptions(u *url.URL) (*redis.FailoverOptions, error) {
	hosts := strings.Split(u.Host, ",")
	master, db, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	q := u.Query()
	sentinelPassword := q.Get("sentinel_password")
	q.Del("sentinel_password")
	q.Set("master_name", master)
	if pw, ok := u.User.Password(); ok {
		q.Set("password", pw)
	}
	if name := u.User.Username(); name != "" {
		q.Set("username", name)
	}
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	gr := url.URL{Scheme: "redis", Host: hosts[0], Path: "/" + db, RawQuery: q.Encode()}
	if sentinelPassword != "" {
		gr.User = url.UserPassword("", sentinelPassword)
	}
	return redis.ParseFailoverURL(gr.String())
}

// clusterOptions reads redis+cluster://[:pw@]n1,n2,n3?… through go-redis's
// cluster URL form.
func clusterOptions(u *url.URL) (*redis.ClusterOptions, error) {
	hosts := strings.Split(u.Host, ",")
	q := u.Query()
	for _, h := range hosts[1:] {
		q.Add("addr", h)
	}
	gr := url.URL{Scheme: "redis", User: u.User, Host: hosts[0], RawQuery: q.Encode()}
	return redis.ParseClusterURL(gr.String())
}

func (f TLS) config(serverName string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis.tls.ca_file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis.tls.ca_file: %s holds no PEM certificate", f.CAFile)
		}
	}
	if (f.CertFile == "") != (f.KeyFile == "") {
		return nil, errors.New("redis.tls: cert_file and key_file go together")
	}
	if f.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redis.tls: client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}
