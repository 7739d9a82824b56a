package webhook

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddressClass(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr, class string // "" when a webhook may reach it
	}{
		{"127.0.0.1", "loopback"},
		{"127.8.9.10", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:10.0.0.1", "private"},
		{"fd00::1", "private"},
		{"fc00::1", "private"},
		{"169.254.169.254", "link-local"}, // the cloud metadata service
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified (this network)"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"100.64.0.1", "shared address space (CGNAT)"},
		{"100.127.255.255", "shared address space (CGNAT)"},
		{"::ffff:100.64.0.1", "shared address space (CGNAT)"},
		{"255.255.255.255", "reserved (incl. broadcast)"},
		{"198.18.0.1", "reserved (benchmarking)"},
		{"::7f00:1", "reserved (IPv4-compatible IPv6)"},
		{"64:ff9b::7f00:1", "loopback (embedded in IPv6)"},
		{"64:ff9b::a9fe:a9fe", "link-local (embedded in IPv6)"},
		{"2002:a00:1::1", "private (embedded in IPv6)"},
		{"64:ff9b:1::1", "private (local-use NAT64)"},
		// Public addresses, including the neighbours of refused ranges.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"172.32.0.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"169.255.0.1", ""},
		{"::ffff:8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
	}
	for _, tt := range tests {
		require.Equal(t, tt.class, addressClass(netip.MustParseAddr(tt.addr)), tt.addr)
	}
}

func TestRefusePrivateFailsClosed(t *testing.T) {
	t.Parallel()
	require.ErrorIs(t, refusePrivate("tcp", "not-an-address:80", nil), ErrPrivateNetwork)
	require.ErrorIs(t, refusePrivate("tcp6", "[::1]:443", nil), ErrPrivateNetwork)
	require.NoError(t, refusePrivate("tcp4", "8.8.8.8:443", nil))
}

func TestNewClientHasItsOwnTransportWithoutProxy(t *testing.T) {
	t.Parallel()
	c := NewClient(ClientOptions{})
	g, ok := c.Transport.(schemeGuard)
	require.True(t, ok)
	require.NotSame(t, http.DefaultTransport, g.Transport)
	// A proxy would do the connecting, past the dial-time check.
	require.Nil(t, g.Proxy, "no proxy from the environment")
	require.Equal(t, defaultTimeout, c.Timeout)
	require.NotNil(t, c.CheckRedirect)
}
