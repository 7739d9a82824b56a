package redisconn

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

func TestEachFormOpensItsClient(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]Kind{
		"redis://:pw@127.0.0.1:6379/2":                    Single,
		"unix:///tmp/redis.sock":                          Single,
		"redis+sentinel://s1:26379,s2:26379/mymaster/1":   Sentinel,
		"redis+cluster://:pw@n1:6379,n2:6379,n3:6379":     Cluster,
		"rediss+sentinel://s1:26379/mymaster?pool_size=5": Sentinel,
	} {
		c, kind, err := Open(raw, TLS{})
		require.NoError(t, err, raw)
		require.Equal(t, want, kind, raw)
		switch kind {
		case Cluster:
			require.IsType(t, &redis.ClusterClient{}, c)
		default:
			require.IsType(t, &redis.Client{}, c)
		}
		require.NoError(t, c.Close())
	}
}

func TestSentinelURLsMapToFailoverOptions(t *testing.T) {
	t.Parallel()
	c, _, err := Open("redis+sentinel://:master-pw@s1:26379,s2:26380,s3:26381/mymaster/3?sentinel_password=s-pw&dial_timeout=2s", TLS{})
	require.NoError(t, err)
	defer c.Close()
	u, _ := parse("redis+sentinel://:master-pw@s1:26379,s2:26380,s3:26381/mymaster/3?sentinel_password=s-pw&dial_timeout=2s")
	o, err := failoverOptions(u)
	require.NoError(t, err)
	require.Equal(t, "mymaster", o.MasterName)
	require.Equal(t, []string{"s1:26379", "s2:26380", "s3:26381"}, o.SentinelAddrs)
	require.Equal(t, "master-pw", o.Password)
	require.Equal(t, "s-pw", o.SentinelPassword)
	require.Equal(t, 3, o.DB)
	require.Equal(t, "2s", o.DialTimeout.String())

	cu, _ := parse("redis+cluster://:pw@n1:6379,n2:6379")
	co, err := clusterOptions(cu)
	require.NoError(t, err)
	require.Equal(t, []string{"n1:6379", "n2:6379"}, co.Addrs)
	require.Equal(t, "pw", co.Password)
}

func TestBadURLsAreRefusedWithoutTheirPassword(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"mysql://u:hunter2@db/x":              `scheme "mysql" is not one of`,
		"redis+sentinel://:hunter2@s1:26379":  "names the master",
		"redis+sentinel://s1:26379/m?bogus=1": "bogus",
	} {
		_, _, err := Open(raw, TLS{})
		require.ErrorContains(t, err, want, raw)
		require.NotContains(t, err.Error(), "hunter2")
	}
	_, _, err := Open("rediss://h:6380", TLS{CertFile: "x.pem"})
	require.ErrorContains(t, err, "cert_file and key_file go together")
	_, _, err = Open("rediss://h:6380", TLS{CAFile: "/nonexistent/ca.pem"})
	require.ErrorContains(t, err, "redis.tls.ca_file")
}
