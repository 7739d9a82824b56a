package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/heraldhq/herald/shared/provider"
)

// ErrPrivateNetwork is what the client's refusal to connect into a private
// network wraps, inside a permanent error: the endpoint's address is not
// one a webhook may reach, and no retry will change that.
var ErrPrivateNetwork = errors.New("refused to connect to a private network address")

const defaultTimeout = 10 * time.Second

// ClientOptions configures NewClient.
type ClientOptions struct {
	// AllowPrivateNetworks lets the client connect to loopback, private,
	// link-local and other internal addresses: for tests and for
	// deployments whose webhook endpoints all live inside their own
	// network. Defaults to false: such addresses are refused.
	AllowPrivateNetworks bool
	// Timeout bounds one request, from dialling to the end of the answer.
	// Defaults to 10 s.
	Timeout time.Duration
}

// NewClient returns an HTTP client for posting to endpoints that tenants
// chose.
//
// Unless opts.AllowPrivateNetworks, it refuses to connect to an address in
// a private network: loopback, RFC 1918 and fc00::/7, link-local (which
// holds the cloud metadata service, 169.254.169.254), unspecified,
// multicast, shared (CGNAT, 100.64.0.0/10) and reserved ranges, also when
// written as IPv4-mapped, NAT64 or 6to4 IPv6. The check runs on the address
// being connected to, after DNS resolution, so a name that resolves to such
// an address, or starts to (DNS rebinding), is refused too. The refusal is
// a permanent error wrapping ErrPrivateNetwork.
//
// The client follows no redirects (a redirect could lead anywhere: the
// answer itself is returned), uses no proxy from the environment (a proxy
// would do the connecting, past the check), speaks only http and https, and
// has a transport of its own, not http.DefaultTransport.
func NewClient(opts ClientOptions) *http.Client {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	dialer := &net.Dialer{Timeout: min(timeout, 5*time.Second), KeepAlive: 30 * time.Second}
	if !opts.AllowPrivateNetworks {
		dialer.Control = refusePrivate
	}
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    min(timeout, 5*time.Second),
		ResponseHeaderTimeout:  timeout,
		ExpectContinueTimeout:  time.Second,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		MaxResponseHeaderBytes: 64 << 10, // an endpoint's headers need not be a megabyte
	}
	return &http.Client{
		Transport:     schemeGuard{transport},
		Timeout:       timeout,
		CheckRedirect: noRedirects,
	}
}

// noRedirects hands back the redirect itself, for the sender to classify.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// schemeGuard refuses any scheme but http and https before the transport
// sees the request. Embedding keeps the transport's CloseIdleConnections.
type schemeGuard struct{ *http.Transport }

func (g schemeGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if s := req.URL.Scheme; s != "http" && s != "https" {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even on error
		}
		return nil, provider.Permanentf("a webhook endpoint must be http or https, not %q", s)
	}
	return g.Transport.RoundTrip(req)
}

// refusePrivate is the dialer's Control function: it runs for each address
// the dialer connects to, once the name is resolved and before connect.
func refusePrivate(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: an address that cannot be read cannot be checked.
		return provider.Permanent(fmt.Errorf("%w: cannot read the address %q", ErrPrivateNetwork, address))
	}
	return CheckAddress(ap.Addr())
}

// CheckAddress is the refusal the client's dialer makes, for a caller
// that can see an address before any connection: a permanent error
// wrapping ErrPrivateNetwork when ip is one a tenant's endpoint may not
// reach, nil otherwise.
func CheckAddress(ip netip.Addr) error {
	if class := addressClass(ip); class != "" {
		return provider.Permanent(fmt.Errorf("%w: %s is %s", ErrPrivateNetwork, ip, class))
	}
	return nil
}

// refusedRanges are the ranges netip has no predicate for.
var refusedRanges = []struct {
	prefix netip.Prefix
	class  string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this network)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "reserved (documentation)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (incl. broadcast)"},
	{netip.MustParsePrefix("::/96"), "reserved (IPv4-compatible IPv6)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private (local-use NAT64)"},
	{netip.MustParsePrefix("100::/64"), "reserved (discard-only)"},
	{netip.MustParsePrefix("2001:db8::/32"), "reserved (documentation)"},
}

// Prefixes whose addresses carry an IPv4 address a gateway will connect to.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// addressClass names the class of a refused address, or is "" for an
// address a webhook may reach.
func addressClass(ip netip.Addr) string {
	// ::ffff:127.0.0.1 is 127.0.0.1; and a zoned address matches no prefix.
	ip = ip.WithZone("").Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(ip) {
			return r.class
		}
	}
	if v4, ok := embeddedIPv4(ip); ok {
		if class := addressClass(v4); class != "" {
			return class + " (embedded in IPv6)"
		}
	}
	return ""
}

// embeddedIPv4 is the IPv4 address a NAT64 or 6to4 address leads to.
func embeddedIPv4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}
