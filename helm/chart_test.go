// Package helm_test checks the Helm chart in ./herald the way `helm install`
// would see it: rendered by Helm's own packages (schema validation, kubeVersion
// check, hooks split from manifests), every manifest decoded strictly into the
// Kubernetes API types, and the configuration file it ships loaded by Herald's
// own strict loader. Nothing here needs a cluster or the network.
package helm_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/heraldhq/herald/services/api/console"
	"github.com/heraldhq/herald/services/delivery/push/fcm/fcmtest"
	"github.com/heraldhq/herald/services/delivery/push/webpush"
	"github.com/heraldhq/herald/services/herald/app"
	"github.com/heraldhq/herald/services/inbound"
	"github.com/heraldhq/herald/shared/documents"
	"github.com/heraldhq/herald/shared/heraldtest"
	"github.com/heraldhq/herald/shared/unsubscribe"
	"github.com/heraldhq/herald/streams"
)

const (
	chartDir         = "herald"
	productionValues = "herald/docs/production-values.yaml"
	release          = "herald"
	namespace        = "notify"
	configPath       = "/etc/herald/herald.yaml"
)

// targets maps each service the chart deploys by default to its `herald run`
// target.
var targets = map[string]string{"router": "router", "workflow": "workflow", "delivery-email": "delivery", "delivery-webhook": "webhook", "delivery-inbox": "inbox",
	"pdf": "pdf", "dlq": "dlq", "api": "api"}

// everyTarget adds the services deployed only when enabled: history, on a
// notification index (history.*) the chart cannot provide, and the text
// channels' workers, on providers (config.sms, config.whatsapp) only the
// platform team can name.
var everyTarget = func() map[string]string {
	m := maps.Clone(targets)
	m["history"] = "history"
	m["delivery-sms"] = "sms"
	m["delivery-whatsapp"] = "whatsapp"
	m["delivery-push"] = "push"
	return m
}()

// usesRedis lists the services given REDIS_URL: every channel's delivery
// workers (their leases) and dlq (its sweeper's election).
var usesRedis = []string{"delivery-email", "delivery-sms", "delivery-whatsapp", "delivery-push", "delivery-inbox", "delivery-webhook", "dlq"}

// usesHistory lists the services given HISTORY_URL when the index is configured.
var usesHistory = []string{"api", "history"}

// relay is the outbox relay's service, deployed only when enabled, on an
// outbox (outbox.*) in the publishers' own database: the only service given
// OUTBOX_URL. The production example publishes directly, and runs none.
const relay = "outbox-relay"

// ServiceMonitor and PrometheusRule have no k8s.io types; these hold the
// fields the chart may use, so a misspelt one fails decoding.
type serviceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type prometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert,omitempty"`
				Record      string            `json:"record,omitempty"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// rendered is one release as `helm install` would create it.
type rendered struct {
	objects map[string]any // "Kind/name" → decoded object
	hooks   []string       // "Kind/name" of the hooks
	notes   string
}

func get[T any](t *testing.T, r *rendered, kind, name string) *T {
	t.Helper()
	obj, ok := r.objects[kind+"/"+name]
	require.Truef(t, ok, "%s/%s was not rendered; rendered: %v", kind, name, r.names())
	typed, ok := obj.(*T)
	require.Truef(t, ok, "%s/%s is a %T", kind, name, obj)
	return typed
}

func (r *rendered) has(kind, name string) bool {
	_, ok := r.objects[kind+"/"+name]
	return ok
}

func (r *rendered) names() []string {
	var names []string
	for n := range r.objects {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *rendered) ofKind(kind string) []string {
	var names []string
	for _, n := range r.names() {
		if k, name, _ := strings.Cut(n, "/"); k == kind {
			names = append(names, name)
		}
	}
	return names
}

// install renders the chart as `helm install --dry-run` does: values merged
// with the chart's and checked against values.schema.json, kubeVersion
// checked, hooks apart.
func install(values map[string]any) (*rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	return installChart(ch, values)
}

func installChart(ch *chart.Chart, values map[string]any) (*rendered, error) {
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.ReleaseName, inst.Namespace = release, namespace
	inst.KubeVersion = &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}
	inst.APIVersions = chartutil.VersionSet{"monitoring.coreos.com/v1"}
	rel, err := inst.Run(ch, values)
	if err != nil {
		return nil, err
	}
	r := &rendered{objects: map[string]any{}, notes: rel.Info.Notes}
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		if err := r.add(m); err != nil {
			return nil, err
		}
	}
	for _, h := range rel.Hooks {
		if err := r.add(h.Manifest); err != nil {
			return nil, err
		}
		r.hooks = append(r.hooks, h.Kind+"/"+h.Name)
	}
	return r, nil
}

// add decodes one manifest into its API type, refusing unknown fields.
func (r *rendered) add(manifest string) error {
	js, err := yaml.YAMLToJSONStrict([]byte(manifest))
	if err != nil {
		return fmt.Errorf("%w in\n%s", err, manifest)
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(js, &meta); err != nil {
		return err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 Secret":
		obj = &corev1.Secret{}
	case "v1 Service":
		obj = &corev1.Service{}
	case "v1 ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "networking.k8s.io/v1 Ingress":
		obj = &networkingv1.Ingress{}
	case "policy/v1 PodDisruptionBudget":
		obj = &policyv1.PodDisruptionBudget{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		obj = &autoscalingv2.HorizontalPodAutoscaler{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		obj = &serviceMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		obj = &prometheusRule{}
	default:
		return fmt.Errorf("unexpected %s %s/%s", meta.APIVersion, meta.Kind, meta.Name)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(obj); err != nil {
		return fmt.Errorf("%s/%s: %w", meta.Kind, meta.Name, err)
	}
	key := meta.Kind + "/" + meta.Name
	if _, dup := r.objects[key]; dup {
		return fmt.Errorf("%s rendered twice", key)
	}
	if meta.Namespace != "" && meta.Namespace != namespace {
		return fmt.Errorf("%s is in namespace %q", key, meta.Namespace)
	}
	r.objects[key] = obj
	return nil
}

func mustInstall(t *testing.T, values map[string]any) *rendered {
	t.Helper()
	r, err := install(values)
	require.NoError(t, err)
	return r
}

func production(t *testing.T) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValuesFile(productionValues)
	require.NoError(t, err)
	return v
}

// values builds a values map from YAML.
func values(t *testing.T, y string) map[string]any {
	t.Helper()
	v := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &v))
	return v
}

func container(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d.Spec.Template.Spec.Containers[0]
}

func env(c corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

func TestDefaultsDeployEveryServiceSafely(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, nil)

	require.ElementsMatch(t, []string{"herald-api", "herald-delivery-email", "herald-delivery-inbox", "herald-delivery-webhook", "herald-dlq", "herald-pdf", "herald-router", "herald-workflow"},
		r.ofKind("Deployment"), "the text channels' workers wait for their providers, the outbox relay for its database")
	require.ElementsMatch(t, append(r.ofKind("Deployment"), "herald-public"), r.ofKind("Service"))
	require.Equal(t, []string{"herald"}, r.ofKind("ServiceAccount"))
	for _, kind := range []string{"HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule", "Secret", "Ingress"} {
		require.Emptyf(t, r.ofKind(kind), "%s rendered by default", kind)
	}

	for svc, target := range targets {
		t.Run(svc, func(t *testing.T) {
			d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
			c := container(t, d)
			pod := d.Spec.Template.Spec

			require.Equal(t, "ghcr.io/heraldhq/herald:0.1.0", c.Image)
			require.Equal(t, []string{"run", target, "--shutdown-timeout=30s"}, c.Args)
			require.Empty(t, c.Command, "the image's entrypoint is /herald")
			require.Equal(t, int32(1), *d.Spec.Replicas)

			ports := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
			if app.ServesOutsiders([]string{target}) {
				ports = append(ports, corev1.ContainerPort{Name: "public", ContainerPort: 8081, Protocol: corev1.ProtocolTCP})
			}
			require.Equal(t, ports, c.Ports, "a port for each listener `herald run %s` opens", target)
			require.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
			require.Equal(t, "http", c.LivenessProbe.HTTPGet.Port.String())
			require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
			require.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port.String())

			require.True(t, *pod.SecurityContext.RunAsNonRoot)
			require.Equal(t, int64(65532), *pod.SecurityContext.RunAsUser)
			require.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SecurityContext.SeccompProfile.Type)
			require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
			require.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
			require.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop)
			require.Empty(t, c.SecurityContext.Capabilities.Add)
			require.False(t, *pod.AutomountServiceAccountToken)
			require.Equal(t, "herald", pod.ServiceAccountName)

			drain, err := time.ParseDuration(strings.TrimPrefix(c.Args[2], "--shutdown-timeout="))
			require.NoError(t, err)
			require.Greater(t, time.Duration(*pod.TerminationGracePeriodSeconds)*time.Second, drain,
				"the kubelet must not kill a pod that is still draining")
			require.NotNil(t, c.Resources.Limits.Memory())

			config, ok := env(c, "HERALD_CONFIG")
			require.True(t, ok)
			require.Equal(t, configPath, config.Value)
			mountsConfig(t, d, "herald")

			nats, ok := env(c, "NATS_URL")
			require.True(t, ok)
			require.Equal(t, "nats://nats.nats.svc.cluster.local:4222", nats.Value)
			_, hasRedis := env(c, "REDIS_URL")
			require.Equal(t, slices.Contains(usesRedis, svc), hasRedis, "REDIS_URL only where Redis is used: /readyz checks it")
			_, hasHistory := env(c, "HISTORY_URL")
			require.False(t, hasHistory, "no index configured: the api answers listings with 503")
			_, hasOutbox := env(c, "OUTBOX_URL")
			require.False(t, hasOutbox, "no outbox configured, and only its relay would read it")

			s := get[corev1.Service](t, r, "Service", "herald-"+svc)
			require.Len(t, s.Spec.Ports, 1, "the service's own Service carries the operations port only")
			require.Equal(t, "http", s.Spec.Ports[0].Name)
			require.Equal(t, "http", s.Spec.Ports[0].TargetPort.String())
			selects(t, s.Spec.Selector, d)
		})
	}
}

// mountsConfig checks that HERALD_CONFIG names a file of the ConfigMap.
func mountsConfig(t *testing.T, d *appsv1.Deployment, configMap string) {
	t.Helper()
	c := container(t, d)
	var volume string
	for _, m := range c.VolumeMounts {
		if m.MountPath == filepath.Dir(configPath) {
			volume = m.Name
			require.True(t, m.ReadOnly)
		}
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.ConfigMap != nil {
			require.Equal(t, configMap, v.ConfigMap.Name)
			return
		}
	}
	t.Fatalf("%s does not mount ConfigMap %s at %s", d.Name, configMap, filepath.Dir(configPath))
}

// selects checks that a selector picks d's pods and no other service's.
func selects(t *testing.T, selector map[string]string, d *appsv1.Deployment) {
	t.Helper()
	require.NotEmpty(t, selector)
	for k, v := range selector {
		require.Equalf(t, v, d.Spec.Template.Labels[k], "label %s", k)
	}
	require.Equal(t, d.Spec.Selector.MatchLabels["app.kubernetes.io/component"], selector["app.kubernetes.io/component"])
}

func TestGracePeriodFollowsTheShutdownTimeout(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, "shutdownTimeoutSeconds: 120"))
	for svc := range targets {
		d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
		require.Equal(t, "--shutdown-timeout=120s", container(t, d).Args[2])
		require.Equal(t, int64(135), *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}
}

func TestConfigMapIsAConfigHeraldLoads(t *testing.T) {
	t.Parallel()
	cfg := loadConfig(t, mustInstall(t, nil))
	require.Equal(t, "0.0.0.0:8080", cfg.HTTP.Listen, "probes and scrapes come from outside the pod")
	require.Equal(t, "0.0.0.0:8081", cfg.API.Listen, "the port named public")
	require.True(t, cfg.Streams.SkipApply, "the hook Job applies the streams")
	require.Equal(t, "json", cfg.Log.Format)
	require.Equal(t, 3, cfg.Streams.Replicas)
	require.Empty(t, cfg.NATS.URL, "NATS_URL comes from the environment")
	require.Empty(t, cfg.Redis.URL, "REDIS_URL comes from the environment")
	require.Empty(t, cfg.History.URL, "HISTORY_URL comes from the environment")
	require.Empty(t, cfg.Outbox.URL, "OUTBOX_URL comes from the environment")
	require.NoError(t, cfg.WithDefaults().Validate())
}

// loadConfig writes the ConfigMap's herald.yaml to disk and reads it with
// Herald's own loader, which refuses any key Herald does not know.
func loadConfig(t *testing.T, r *rendered) app.Config {
	t.Helper()
	cm := get[corev1.ConfigMap](t, r, "ConfigMap", "herald")
	require.Equal(t, []string{"herald.yaml"}, keys(cm.Data))
	return loadConfigText(t, cm.Data["herald.yaml"])
}

func loadConfigText(t *testing.T, text string) app.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), "herald.yaml")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	cfg, err := app.Load(path)
	require.NoError(t, err, "Herald refuses the chart's config file:\n%s", text)
	return cfg
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestChartOwnedSettingsWinOverValues(t *testing.T) {
	t.Parallel()
	// The schema refuses these keys under config; a chart installed without
	// its schema (helm --skip-schema-validation) must still get them right.
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	ch.Schema = nil
	r, err := installChart(ch, values(t, `
config:
  http: {listen: 127.0.0.1:9999}
  api: {listen: 0.0.0.0:8080}
  log: {format: text}
  streams: {skip_apply: false}
  history: {url: "postgres://herald:hunter2@pg/herald"}
  outbox: {url: "postgres://orders:hunter2@pg/orders", batch: 200}
`))
	require.NoError(t, err)
	cfg := loadConfig(t, r)
	require.Empty(t, cfg.History.URL, "a URL with a password never goes in the ConfigMap")
	require.Empty(t, cfg.Outbox.URL, "a URL with a password never goes in the ConfigMap")
	require.Equal(t, 200, cfg.Outbox.Batch, "the relay's other settings stay")
	require.Equal(t, "0.0.0.0:8080", cfg.HTTP.Listen)
	require.Equal(t, "0.0.0.0:8081", cfg.API.Listen)
	require.Equal(t, "json", cfg.Log.Format)
	require.True(t, cfg.Streams.SkipApply)
}

func TestProductionValues(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, production(t))

	// Herald starts on the file, given the secrets it names: every provider
	// builds, the link key is long enough, the alert URL is there.
	cfg := loadConfig(t, r)
	require.Equal(t, "Orders <orders@acme.example>", cfg.Email.From)
	ing := get[networkingv1.Ingress](t, r, "Ingress", "herald")
	require.Equal(t, "https://"+ing.Spec.Rules[0].Host, cfg.Documents.PublicURL, "links point at the Ingress")
	secrets := map[string]string{}
	for _, name := range secretNames(cfg) {
		secrets[name] = "a-test-value-for-" + name + "-that-is-at-least-32-bytes"
	}
	require.ElementsMatch(t, []string{"SENDGRID_API_KEY", "TWILIO_AUTH_TOKEN", "HERALD_LINK_SECRET", "HERALD_SLACK_WEBHOOK", "FCM_CREDENTIALS"}, keys(secrets))
	secrets["FCM_CREDENTIALS"] = string(fcmtest.New(t).ServiceAccountJSON()) // a service account's JSON key
	secrets["HERALD_SLACK_WEBHOOK"] = "https://hooks.slack.example/services/T0/B0/x"
	secrets["TWILIO_AUTH_TOKEN"] = "0123456789abcdef0123456789abcdef" // Twilio's form: hex
	// The vault's master key, by its default name (the file's comment
	// creates it): webhook signing secrets are sealed with it.
	secrets["HERALD_MASTER_KEY"] = base64.StdEncoding.EncodeToString(make([]byte, 32))
	cfg.Getenv = func(name string) string { return secrets[name] }
	// As REDIS_URL and HISTORY_URL would set them; nothing connects.
	cfg.Redis.URL = "redis://127.0.0.1:1/0"
	cfg.History.URL = "postgres://herald@127.0.0.1:1/herald"
	cfg.Services = slices.Collect(maps.Values(everyTarget))
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, a.Stop(t.Context()))

	for svc := range everyTarget {
		t.Run(svc, func(t *testing.T) {
			d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
			c := container(t, d)
			require.Equal(t, "ghcr.io/heraldhq/herald:0.1.0", c.Image)
			require.Equal(t, []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "herald-secrets"}}}}, c.EnvFrom)

			redis, ok := env(c, "REDIS_URL")
			require.Equal(t, slices.Contains(usesRedis, svc), ok)
			if ok {
				require.Empty(t, redis.Value, "a URL with a password is never inline")
				require.Equal(t, "herald-redis", redis.ValueFrom.SecretKeyRef.Name)
				require.Equal(t, "url", redis.ValueFrom.SecretKeyRef.Key)
			}
			history, ok := env(c, "HISTORY_URL")
			require.Equal(t, slices.Contains(usesHistory, svc), ok)
			if ok {
				require.Empty(t, history.Value, "a URL with a password is never inline")
				require.Equal(t, "herald-history", history.ValueFrom.SecretKeyRef.Name)
			}

			pdb := get[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "herald-"+svc)
			require.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue())
			selects(t, pdb.Spec.Selector.MatchLabels, d)

			spread := d.Spec.Template.Spec.TopologySpreadConstraints
			require.Len(t, spread, 2)
			for _, s := range spread {
				selects(t, s.LabelSelector.MatchLabels, d)
			}
		})
	}

	hpa := get[autoscalingv2.HorizontalPodAutoscaler](t, r, "HorizontalPodAutoscaler", "herald-delivery-email")
	require.Equal(t, "Deployment", hpa.Spec.ScaleTargetRef.Kind)
	require.Equal(t, "herald-delivery-email", hpa.Spec.ScaleTargetRef.Name)
	require.Equal(t, int32(3), *hpa.Spec.MinReplicas)
	require.Equal(t, int32(12), hpa.Spec.MaxReplicas)
	require.Nil(t, get[appsv1.Deployment](t, r, "Deployment", "herald-delivery-email").Spec.Replicas,
		"the HPA owns the replica count")
	require.Equal(t, []string{"herald-delivery-email", "herald-delivery-webhook"}, r.ofKind("HorizontalPodAutoscaler"))

	sa := get[corev1.ServiceAccount](t, r, "ServiceAccount", "herald")
	require.Contains(t, sa.Annotations, "eks.amazonaws.com/role-arn")

	sm := get[serviceMonitor](t, r, "ServiceMonitor", "herald")
	require.Equal(t, "kube-prometheus-stack", sm.Labels["release"])
	require.Len(t, sm.Spec.Endpoints, 1)
	require.Equal(t, "http", sm.Spec.Endpoints[0].Port)
	require.Equal(t, "/metrics", sm.Spec.Endpoints[0].Path)
	for svc := range everyTarget {
		s := get[corev1.Service](t, r, "Service", "herald-"+svc)
		for k, v := range sm.Spec.Selector.MatchLabels {
			require.Equalf(t, v, s.Labels[k], "the ServiceMonitor misses Service herald-%s", svc)
		}
	}
	require.True(t, r.has("PrometheusRule", "herald"))
}

// secretNames lists the environment variables the config file names.
func secretNames(cfg app.Config) []string {
	var names []string
	add := func(ns ...string) {
		for _, n := range ns {
			if n != "" {
				names = append(names, n)
			}
		}
	}
	for _, p := range slices.Concat(cfg.Email.Providers, cfg.SMS.Providers, cfg.WhatsApp.Providers) {
		add(p.APIKeyEnv, p.AccessKeyIDEnv, p.SecretAccessKeyEnv, p.PasswordEnv, p.AuthTokenEnv)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	add(cfg.Documents.LinkSecretEnv, cfg.DLQ.Alerts.SlackURLEnv, cfg.DLQ.Alerts.WebhookURLEnv)
	if p := cfg.Push; p.FCM != nil {
		add(p.FCM.CredentialsEnv)
	}
	if p := cfg.Push; p.APNs != nil {
		add(p.APNs.KeyEnv)
	}
	if p := cfg.Push; p.WebPush != nil {
		add(p.WebPush.VAPIDPrivateKeyEnv)
	}
	return names
}

func TestStreamsJobRunsBeforeTheReleaseExists(t *testing.T) {
	t.Parallel()
	for name, vals := range map[string]map[string]any{
		"defaults":   nil,
		"production": production(t),
		"dev secret": values(t, "secrets: {create: true, values: {SENDGRID_API_KEY: x}}\nnats: {existingSecret: nats-creds}"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := mustInstall(t, vals)
			require.ElementsMatch(t, []string{"ConfigMap/herald-streams", "Job/herald-streams"}, r.hooks)
			job := get[batchv1.Job](t, r, "Job", "herald-streams")
			require.Equal(t, "pre-install,pre-upgrade", job.Annotations["helm.sh/hook"])
			require.Equal(t, "before-hook-creation,hook-succeeded", job.Annotations["helm.sh/hook-delete-policy"])
			require.Equal(t, int32(3), *job.Spec.BackoffLimit)
			require.Equal(t, int64(300), *job.Spec.ActiveDeadlineSeconds)

			pod := job.Spec.Template.Spec
			require.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
			require.Len(t, pod.Containers, 1)
			c := pod.Containers[0]
			require.Equal(t, []string{"streams", "apply"}, c.Args, "the streams follow the configuration file alone")
			require.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
			require.True(t, *pod.SecurityContext.RunAsNonRoot)
			_, ok := env(c, "NATS_URL")
			require.True(t, ok)
			_, ok = env(c, "HISTORY_URL")
			require.False(t, ok, "streams apply never touches the index")

			// A pre-install hook runs before anything else of the release is
			// created: it must not need any of it, only hooks run before it.
			created := map[string]bool{}
			for _, n := range r.names() {
				if !slices.Contains(r.hooks, n) {
					created[n] = true
				}
			}
			require.NotEmpty(t, pod.Volumes, "the configuration file")
			for _, v := range pod.Volumes {
				require.NotNil(t, v.ConfigMap, v.Name)
				runsBefore(t, r, "ConfigMap/"+v.ConfigMap.Name, "Job/herald-streams")
				require.Equal(t, get[corev1.ConfigMap](t, r, "ConfigMap", "herald").Data,
					get[corev1.ConfigMap](t, r, "ConfigMap", v.ConfigMap.Name).Data, "the services' own file")
			}
			require.False(t, created["ServiceAccount/"+pod.ServiceAccountName], "the chart's ServiceAccount does not exist yet")
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					require.False(t, created["Secret/"+e.ValueFrom.SecretKeyRef.Name])
				}
			}
			for _, e := range c.EnvFrom {
				require.Nil(t, e.ConfigMapRef)
				if e.SecretRef != nil {
					require.False(t, created["Secret/"+e.SecretRef.Name])
				}
			}
		})
	}
}

// runsBefore checks that hook is a hook of the same events as job's, and
// created before it: a lower weight.
func runsBefore(t *testing.T, r *rendered, hook, job string) {
	t.Helper()
	require.Contains(t, r.hooks, hook, "created with the release, after the hooks")
	annotations := func(name string) map[string]string {
		obj, ok := r.objects[name].(metav1.Object)
		require.True(t, ok, name)
		return obj.GetAnnotations()
	}
	h, j := annotations(hook), annotations(job)
	require.Equal(t, j["helm.sh/hook"], h["helm.sh/hook"], "%s is a hook of the same events as %s", hook, job)
	weight := func(a map[string]string) int {
		w, err := strconv.Atoi(cmp.Or(a["helm.sh/hook-weight"], "0"))
		require.NoError(t, err)
		return w
	}
	require.Less(t, weight(h), weight(j), "%s is created before %s", hook, job)
}

// What values.yaml says is what the streams are. The hook Job, run as the
// kubelet would run it — its arguments, its environment, the files it
// mounts — on an embedded NATS server, leaves every stream and consumer as
// the services, reading the release's ConfigMap, declare them: the
// retentions of the ledger, documents and replays, and first come, first
// served consumers when scheduling.fair is off. (The services skip applying
// them: the Job is all there is.)
func TestTheStreamsJobAppliesWhatTheServicesDeclare(t *testing.T) {
	t.Parallel()
	herald := buildHerald(t)
	for name, tt := range map[string]struct {
		values string
		// from, when set, is the release upgraded from: its job ran first.
		from string
		want map[string]time.Duration // stream → max_age on the server
		fifo bool                     // NOTIFY's declared consumers exist
	}{
		"upgraded from first come, first served": {from: "config: {streams: {replicas: 1}, scheduling: {fair: false}}",
			values: "config: {streams: {replicas: 1}}", fifo: false, want: map[string]time.Duration{"KV_deliveries": 2160 * time.Hour}},
		"upgraded from fair": {from: "config: {streams: {replicas: 1}}",
			values: "config: {streams: {replicas: 1}, scheduling: {fair: false}}", fifo: true, want: map[string]time.Duration{"KV_deliveries": 2160 * time.Hour}},
		"defaults": {values: "config: {streams: {replicas: 1}}", fifo: false, want: map[string]time.Duration{
			"KV_deliveries": 2160 * time.Hour, "KV_idempotency": 24 * time.Hour, "OBJ_documents": 0}},
		"tuned": {values: `
config:
  streams: {replicas: 1}
  ledger: {retention: 1500h}
  api: {idempotency_ttl: 48h}
  documents: {retention: 2400h}
  scheduling: {fair: false}
`, fifo: true, want: map[string]time.Duration{
			"KV_deliveries": 1500 * time.Hour, "KV_delivery_retries": 1500 * time.Hour, "KV_idempotency": 48 * time.Hour, "OBJ_documents": 2400 * time.Hour}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := mustInstall(t, values(t, tt.values))
			n := heraldtest.StartNATS(t)
			if tt.from != "" {
				runJob(t, mustInstall(t, values(t, tt.from)), herald, "herald-streams", n.Server.URL())
				if tt.fifo { // the fair release had served a tenant
					_, err := n.JS.CreateConsumer(heraldtest.Context(t), "NOTIFY", jetstream.ConsumerConfig{Name: "email-normal_acme",
						FilterSubject: "notify.email.normal.acme", AckPolicy: jetstream.AckExplicitPolicy})
					require.NoError(t, err)
				}
			}
			runJob(t, r, herald, "herald-streams", n.Server.URL())

			services := loadConfig(t, r).WithDefaults()
			report, err := streams.Check(heraldtest.Context(t), n.JS, services.StreamOptions())
			require.NoError(t, err)
			var lines []string
			for _, res := range report {
				lines = append(lines, res.String())
			}
			require.Zero(t, report.Drifted(), "herald streams apply --dry-run, as the services declare them:\n%s", strings.Join(lines, "\n"))
			for _, res := range report { // neither mode's consumers are left beside the other's
				require.NotEqual(t, streams.Extra, res.Action, "%s", res)
			}
			for stream, age := range tt.want {
				s, err := n.JS.Stream(heraldtest.Context(t), stream)
				require.NoError(t, err)
				require.Equal(t, age, s.CachedInfo().Config.MaxAge, stream)
			}
			_, err = n.JS.Consumer(heraldtest.Context(t), "NOTIFY", "email-normal")
			require.Equal(t, tt.fifo, err == nil, "NOTIFY's consumers are shared only when scheduling is not fair: %v", err)
		})
	}
}

// buildHerald builds the binary the image runs (/herald).
func buildHerald(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "herald")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "../services/herald").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// runJob runs the Job's one container as the kubelet would, with herald as
// the image's entrypoint: its arguments; its environment alone, NATS_URL
// pointed at natsURL; the ConfigMaps it mounts written to a directory of
// the test's own, where paths into them in its environment lead.
func runJob(t *testing.T, r *rendered, herald, name, natsURL string) {
	t.Helper()
	pod := get[batchv1.Job](t, r, "Job", name).Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Empty(t, c.Command, "the image's entrypoint is /herald")
	root := t.TempDir()
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		require.GreaterOrEqual(t, i, 0, "volume %s", m.Name)
		require.NotNil(t, pod.Volumes[i].ConfigMap, "volume %s", m.Name)
		cm := get[corev1.ConfigMap](t, r, "ConfigMap", pod.Volumes[i].ConfigMap.Name)
		dir := filepath.Join(root, m.MountPath)
		require.NoError(t, os.MkdirAll(dir, 0o700))
		for file, text := range cm.Data {
			require.NoError(t, os.WriteFile(filepath.Join(dir, file), []byte(text), 0o600))
		}
	}
	var environ []string
	for _, e := range c.Env {
		value := e.Value
		switch {
		case e.Name == "NATS_URL":
			value = natsURL
		case e.ValueFrom != nil:
			t.Fatalf("%s comes from outside the chart; this test has none", e.Name)
		case slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return strings.HasPrefix(value, m.MountPath+"/") }):
			value = filepath.Join(root, value)
		}
		environ = append(environ, e.Name+"="+value)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, herald, c.Args...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s %v:\n%s", name, c.Args, out)
}

func TestWithoutTheStreamsJobServicesApplyTheStreams(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, "streamsJob: {enabled: false}"))
	require.Empty(t, r.hooks)
	require.False(t, loadConfig(t, r).Streams.SkipApply)
}

func TestConfigChangesRollThePods(t *testing.T) {
	t.Parallel()
	checksums := func(r *rendered) string {
		cm := get[corev1.ConfigMap](t, r, "ConfigMap", "herald")
		sum := sha256.Sum256([]byte(strings.TrimSuffix(cm.Data["herald.yaml"], "\n")))
		want := hex.EncodeToString(sum[:])
		for svc := range targets {
			d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
			require.Equal(t, want, d.Spec.Template.Annotations["checksum/config"], "the checksum of the ConfigMap's file")
		}
		return want
	}
	before := checksums(mustInstall(t, nil))
	require.Equal(t, before, checksums(mustInstall(t, nil)), "same config, same pods")
	require.NotEqual(t, before, checksums(mustInstall(t, values(t, "config: {log: {level: debug}}"))))
}

func TestSecretsAreOnlyReferenced(t *testing.T) {
	t.Parallel()
	const apiKey, linkKey, redisURL = "SG.never-in-a-configmap", "link-key-never-in-a-configmap-0123456789", "redis://:hunter2@redis:6379/0"
	r := mustInstall(t, values(t, fmt.Sprintf(`
config:
  email:
    from: "Orders <orders@acme.example>"
    providers: [{type: sendgrid, api_key_env: SENDGRID_API_KEY}]
  documents: {link_secret_env: HERALD_LINK_SECRET}
secrets:
  existingSecret: herald-prod
  create: true
  values: {SENDGRID_API_KEY: %q, HERALD_LINK_SECRET: %q}
redis: {existingSecret: redis-url}
outbox: {existingSecret: herald-outbox, url: "postgres://orders:hunter2@pg/orders"}
services: {outbox-relay: {enabled: true}}
`, apiKey, linkKey)))
	require.NotContains(t, mustInstall(t, nil).names(), "Secret/herald-secrets")
	outbox, ok := env(container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-"+relay)), "OUTBOX_URL")
	require.True(t, ok)
	require.Empty(t, outbox.Value, "existingSecret wins over url")
	require.Equal(t, "herald-outbox", outbox.ValueFrom.SecretKeyRef.Name)

	secret := get[corev1.Secret](t, r, "Secret", "herald-secrets")
	require.Equal(t, apiKey, secret.StringData["SENDGRID_API_KEY"])
	for _, name := range r.names() {
		if name == "Secret/herald-secrets" {
			continue
		}
		b, err := json.Marshal(r.objects[name])
		require.NoError(t, err)
		for _, value := range []string{apiKey, linkKey, redisURL, "hunter2"} {
			require.NotContainsf(t, string(b), value, "%s holds a secret value", name)
		}
	}
	cfg := loadConfig(t, r)
	require.Equal(t, "SENDGRID_API_KEY", cfg.Email.Providers[0].APIKeyEnv)

	for _, svc := range append(keys(targets), relay) {
		d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
		var refs []string
		for _, e := range container(t, d).EnvFrom {
			refs = append(refs, e.SecretRef.Name)
		}
		require.Equal(t, []string{"herald-prod", "herald-secrets"}, refs)
		require.NotEmpty(t, d.Spec.Template.Annotations["checksum/secret"], "a changed chart Secret rolls the pods")
	}
}

func TestOptionalResourcesOnlyWhenEnabled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		values string
		kind   string
		want   []string
	}{
		{"services: {pdf: {autoscaling: {enabled: true}}}", "HorizontalPodAutoscaler", []string{"herald-pdf"}},
		{"services: {router: {replicas: 2}}", "PodDisruptionBudget", []string{"herald-router"}},
		{"services: {dlq: {podDisruptionBudget: {enabled: true}}}", "PodDisruptionBudget", []string{"herald-dlq"}},
		{"services: {pdf: {autoscaling: {enabled: true, minReplicas: 2}}}", "PodDisruptionBudget", []string{"herald-pdf"}},
		{"serviceMonitor: {enabled: true}", "ServiceMonitor", []string{"herald"}},
		{"prometheusRule: {enabled: true}", "PrometheusRule", []string{"herald"}},
		{"secrets: {create: true, values: {A: b}}", "Secret", []string{"herald-secrets"}},
		{"services: {pdf: {enabled: false}}", "Deployment", []string{"herald-api", "herald-delivery-email", "herald-delivery-inbox", "herald-delivery-webhook", "herald-dlq", "herald-router", "herald-workflow"}},
		{"services: {pdf: {enabled: false}}", "Service", []string{"herald-api", "herald-delivery-email", "herald-delivery-inbox", "herald-delivery-webhook", "herald-dlq", "herald-public", "herald-router", "herald-workflow"}},
		{"services: {delivery-webhook: {enabled: false}}", "Deployment", []string{"herald-api", "herald-delivery-email", "herald-delivery-inbox", "herald-dlq", "herald-pdf", "herald-router", "herald-workflow"}},
		{"services: {workflow: {enabled: false}}", "Deployment", []string{"herald-api", "herald-delivery-email", "herald-delivery-inbox", "herald-delivery-webhook", "herald-dlq", "herald-pdf", "herald-router"}},
		{"services: {workflow: {replicas: 2}}", "PodDisruptionBudget", []string{"herald-workflow"}},
		{"services: {delivery-webhook: {autoscaling: {enabled: true}}}", "HorizontalPodAutoscaler", []string{"herald-delivery-webhook"}},
		{"services: {delivery-webhook: {replicas: 2}}", "PodDisruptionBudget", []string{"herald-delivery-webhook"}},
		{"public: {ingress: {enabled: true, host: herald.example.com}}", "Ingress", []string{"herald"}},
	}
	for _, tt := range tests {
		t.Run(tt.values, func(t *testing.T) {
			t.Parallel()
			r := mustInstall(t, values(t, tt.values))
			require.Equal(t, tt.want, r.ofKind(tt.kind))
		})
	}
}

// Only the api's pods serve the public port: a worker opens no public
// listener, so no other Deployment declares the port, and without the api
// there is nothing for a public Service or an Ingress to reach.
func TestOnlyTheAPIDeclaresThePublicPort(t *testing.T) {
	t.Parallel()
	for _, api := range []bool{true, false} {
		vals := fmt.Sprintf(`
history: {existingSecret: herald-history}
outbox: {existingSecret: herald-outbox}
config: {sms: {providers: [{type: awssms, region: eu-west-1}]}, whatsapp: {providers: [{type: textdir, dir: /tmp/wa}]}}
services: {api: {enabled: %v}, history: {enabled: true}, delivery-sms: {enabled: true}, delivery-whatsapp: {enabled: true}, outbox-relay: {enabled: true}}
`, api)
		r := mustInstall(t, values(t, vals))
		require.Subset(t, r.ofKind("Deployment"), []string{"herald-router", "herald-delivery-email", "herald-history",
			"herald-delivery-sms", "herald-delivery-whatsapp", "herald-outbox-relay"}, "the workers off by default too")
		var public []string
		for _, name := range r.ofKind("Deployment") {
			d := get[appsv1.Deployment](t, r, "Deployment", name)
			c := container(t, d)
			if slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "public" || p.ContainerPort == 8081 }) {
				public = append(public, name)
			}
			require.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port.String(), "%s: readiness is on the operations port", name)
			require.Equal(t, "http", c.LivenessProbe.HTTPGet.Port.String(), "%s: liveness is on the operations port", name)
			if r.has("Service", "herald-public") {
				selector := labels.SelectorFromSet(get[corev1.Service](t, r, "Service", "herald-public").Spec.Selector)
				require.Equal(t, slices.Contains(public, name), selector.Matches(labels.Set(d.Spec.Template.Labels)), "%s behind the public Service", name)
			}
		}
		if api {
			require.Equal(t, []string{"herald-api"}, public)
			require.True(t, r.has("Service", "herald-public"))
			continue
		}
		require.Empty(t, public, "without the api, no pod has a public port")
		require.False(t, r.has("Service", "herald-public"), "nothing to reach")
		_, err := install(values(t, vals+"\npublic: {ingress: {enabled: true, host: herald.example.com}}"))
		require.ErrorContains(t, err, "public.ingress.enabled needs services.api.enabled")
	}
}

// Only the public port leaves the cluster: the Ingress reaches the public
// Service, which reaches the api pods' public port and nothing else;
// probes and Prometheus use the operations port through the services' own
// Services, which no Ingress reaches.
func TestOnlyThePublicPortIsExposed(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, `
public: {ingress: {enabled: true, host: herald.example.com, className: nginx}}
serviceMonitor: {enabled: true}
`))
	ing := get[networkingv1.Ingress](t, r, "Ingress", "herald")
	require.Len(t, ing.Spec.Rules, 1)
	require.Equal(t, "herald.example.com", ing.Spec.Rules[0].Host)
	require.NotEmpty(t, ing.Spec.Rules[0].HTTP.Paths)
	for _, path := range ing.Spec.Rules[0].HTTP.Paths {
		require.Equal(t, networkingv1.ServiceBackendPort{Name: "public"}, path.Backend.Service.Port)
		require.Equal(t, "herald-public", path.Backend.Service.Name)
	}

	public := get[corev1.Service](t, r, "Service", "herald-public")
	require.Len(t, public.Spec.Ports, 1)
	require.Equal(t, "public", public.Spec.Ports[0].Name)
	require.Equal(t, "public", public.Spec.Ports[0].TargetPort.String())
	selector := labels.SelectorFromSet(public.Spec.Selector)
	for svc := range targets {
		d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
		// The API's pods serve /v1 and the document links alike: the
		// public Service sends outsiders to them only.
		require.Equal(t, svc == "api", selector.Matches(labels.Set(d.Spec.Template.Labels)), "%s takes public requests", svc)
		for _, p := range container(t, d).Ports {
			if p.Name == "public" {
				require.Equal(t, loadConfig(t, r).API.Listen, fmt.Sprintf("0.0.0.0:%d", p.ContainerPort))
			}
		}
	}
	job := get[batchv1.Job](t, r, "Job", "herald-streams")
	require.False(t, selector.Matches(labels.Set(job.Spec.Template.Labels)), "the streams Job serves nothing")

	sm := get[serviceMonitor](t, r, "ServiceMonitor", "herald")
	scraped, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	require.NoError(t, err)
	require.False(t, scraped.Matches(labels.Set(public.Labels)), "Prometheus does not scrape through the public Service")
	for svc := range targets {
		require.True(t, scraped.Matches(labels.Set(get[corev1.Service](t, r, "Service", "herald-"+svc).Labels)), svc)
	}
	require.Equal(t, "http", sm.Spec.Endpoints[0].Port)
}

// The console is the operators' page: the Ingress takes it to the internet
// only when public.ingress.console says so. What Herald serves under /v1 —
// the API, document and unsubscribe links, the providers' webhooks — it
// always takes; nothing else.
func TestTheIngressRoutesTheConsoleOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"", "console: false", "console: true"} {
		r := mustInstall(t, values(t, fmt.Sprintf("public: {ingress: {enabled: true, host: herald.example.com, %s}}", setting)))
		ing := get[networkingv1.Ingress](t, r, "Ingress", "herald")
		exposed := setting == "console: true"
		for path, want := range map[string]bool{
			"/v1/notifications": true, documents.LinkPath + "acme/x.pdf": true, unsubscribe.Path + "token": true,
			inbound.Path + "sendgrid/acme/main": true, "/v1/openapi.json": true,
			console.Path: exposed, console.Path + "login": exposed, strings.TrimSuffix(console.Path, "/"): exposed,
			"/": false, "/metrics": false, "/readyz": false, "/v10": false, "/consoles": false,
		} {
			require.Equalf(t, want, routes(t, ing, path), "%q routes %s", setting, path)
		}
	}
}

// routes says whether the Ingress sends a request for path to a backend,
// as Kubernetes matches a path of type Prefix: element by element.
func routes(t *testing.T, ing *networkingv1.Ingress, path string) bool {
	t.Helper()
	elements := func(p string) []string { return strings.Split(strings.Trim(p, "/"), "/") }
	for _, rule := range ing.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			require.Equal(t, networkingv1.PathTypePrefix, *p.PathType, "a path type whose matching is the controller's own")
			prefix, req := elements(p.Path), elements(path)
			if p.Path == "/" || len(req) >= len(prefix) && slices.Equal(req[:len(prefix)], prefix) {
				return true
			}
		}
	}
	return false
}

// Each service may connect as its own NATS user, with only the permissions
// it needs: its URL (credentials in it) comes from a Secret of its own.
func TestServicesMayEachHaveTheirOwnNATSUser(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, "services: {router: {natsExistingSecret: herald-nats-router}}"))
	router, ok := env(container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-router")), "NATS_URL")
	require.True(t, ok)
	require.Empty(t, router.Value, "never in the manifest")
	require.Equal(t, "herald-nats-router", router.ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "url", router.ValueFrom.SecretKeyRef.Key)
	pdf, ok := env(container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-pdf")), "NATS_URL")
	require.True(t, ok)
	require.Equal(t, "nats://nats.nats.svc.cluster.local:4222", pdf.Value, "the others keep nats.url")

	_, err := install(values(t, "services: {router: {natsExistingSecret: Not_A_Name}}"))
	require.ErrorContains(t, err, "/services/router/natsExistingSecret")
}

// The notification index's URL carries a password: the history service,
// which fills the index, and the api, which lists from it, read it from the
// Secret; no other pod holds it, and none depends on the database's health.
func TestHistoryURLReachesOnlyTheServicesThatUseTheIndex(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, "history: {existingSecret: herald-history, existingSecretKey: dsn}\nservices: {history: {enabled: true, replicas: 3}}"))

	d := get[appsv1.Deployment](t, r, "Deployment", "herald-history")
	require.Equal(t, []string{"run", "history", "--shutdown-timeout=30s"}, container(t, d).Args)
	require.Equal(t, int32(3), *d.Spec.Replicas, "any number share the history consumers")
	mountsConfig(t, d, "herald")
	selects(t, get[corev1.Service](t, r, "Service", "herald-history").Spec.Selector, d)
	selects(t, get[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "herald-history").Spec.Selector.MatchLabels, d)

	for svc := range everyTarget {
		if svc == "delivery-sms" || svc == "delivery-whatsapp" || svc == "delivery-push" {
			continue // not enabled here
		}
		c := container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc))
		url, ok := env(c, "HISTORY_URL")
		require.Equalf(t, slices.Contains(usesHistory, svc), ok, "%s: HISTORY_URL only where the index is used", svc)
		if ok {
			require.Empty(t, url.Value, "never in the manifest")
			require.Equal(t, &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "herald-history"}, Key: "dsn"}, url.ValueFrom.SecretKeyRef)
		}
	}
	require.Empty(t, loadConfig(t, r).History.URL)
}

func TestHistoryURLFromValuesForDevelopment(t *testing.T) {
	t.Parallel()
	const url = "postgres://herald:dev@postgres.dev.svc:5432/herald?sslmode=disable"
	r := mustInstall(t, values(t, fmt.Sprintf("history: {url: %q}\nservices: {history: {enabled: true}}", url)))
	for _, svc := range usesHistory {
		got, ok := env(container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)), "HISTORY_URL")
		require.True(t, ok, svc)
		require.Equal(t, url, got.Value, svc)
	}
	cm := get[corev1.ConfigMap](t, r, "ConfigMap", "herald")
	require.NotContains(t, cm.Data["herald.yaml"], "postgres://", "the ConfigMap is readable more widely than the Deployment")
}

// With the index configured but the history service left off (run by
// another release, say), the api still lists from it.
func TestTheAPIListsFromAnIndexWhateverFillsIt(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, "history: {existingSecret: herald-history}"))
	require.False(t, r.has("Deployment", "herald-history"))
	require.False(t, r.has("Service", "herald-history"))
	url, ok := env(container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-api")), "HISTORY_URL")
	require.True(t, ok)
	require.Equal(t, "herald-history", url.ValueFrom.SecretKeyRef.Name)
}

// The outbox's URL carries the publishers' database password: only the
// relay, which publishes its rows, reads it, from the Secret; no other pod
// holds it, and none depends on that database's health. The relay needs
// NATS alone besides, through a user of its own that may publish the rows'
// subjects, and Herald accepts the configuration file it shares.
func TestOutboxURLReachesOnlyTheRelay(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, `
outbox: {existingSecret: herald-outbox, existingSecretKey: dsn}
history: {existingSecret: herald-history}
config:
  sms: {providers: [{type: awssms, region: eu-west-1}]}
  whatsapp: {providers: [{type: textdir, dir: /tmp/wa}]}
  push: {fcm: {credentials_env: FCM_CREDENTIALS}}
  outbox: {batch: 200, poll: 2s, retention: 48h}
services:
  history: {enabled: true}
  delivery-sms: {enabled: true}
  delivery-whatsapp: {enabled: true}
  delivery-push: {enabled: true}
  outbox-relay: {enabled: true, replicas: 2, natsExistingSecret: herald-nats-outbox}
`))

	d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+relay)
	c := container(t, d)
	require.Equal(t, []string{"run", "outbox-relay", "--shutdown-timeout=30s"}, c.Args)
	require.Equal(t, int32(2), *d.Spec.Replicas, "relays take turns on one table")
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	mountsConfig(t, d, "herald")
	selects(t, get[corev1.Service](t, r, "Service", "herald-"+relay).Spec.Selector, d)
	selects(t, get[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", "herald-"+relay).Spec.Selector.MatchLabels, d)
	nats, ok := env(c, "NATS_URL")
	require.True(t, ok)
	require.Empty(t, nats.Value)
	require.Equal(t, "herald-nats-outbox", nats.ValueFrom.SecretKeyRef.Name, "its own user, allowed orders.* and inventory.*")
	require.Contains(t, r.notes, "outbox-relay      herald run outbox-relay   2 replica(s)")

	for _, svc := range append(keys(everyTarget), relay) {
		c := container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc))
		url, ok := env(c, "OUTBOX_URL")
		require.Equalf(t, svc == relay, ok, "%s: OUTBOX_URL only for the relay", svc)
		if ok {
			require.Empty(t, url.Value, "never in the manifest")
			require.Equal(t, &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "herald-outbox"}, Key: "dsn"}, url.ValueFrom.SecretKeyRef)
		}
		_, ok = env(c, "REDIS_URL")
		require.Equal(t, slices.Contains(usesRedis, svc), ok, svc)
		_, ok = env(c, "HISTORY_URL")
		require.Equal(t, slices.Contains(usesHistory, svc), ok, svc)
	}
	_, ok = env(get[batchv1.Job](t, r, "Job", "herald-streams").Spec.Template.Spec.Containers[0], "OUTBOX_URL")
	require.False(t, ok, "streams apply never touches the outbox")

	// The relay starts on the file, given OUTBOX_URL; nothing connects.
	cfg := loadConfig(t, r)
	require.Empty(t, cfg.Outbox.URL)
	require.Equal(t, 200, cfg.Outbox.Batch)
	require.Equal(t, 2*time.Second, cfg.Outbox.Poll)
	require.Equal(t, 48*time.Hour, cfg.Outbox.Retention)
	cfg.Outbox.URL = "postgres://orders@127.0.0.1:1/orders"
	cfg.Services = []string{relay}
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, a.Stop(t.Context()))
}

func TestOutboxURLFromValuesForDevelopment(t *testing.T) {
	t.Parallel()
	const url = "postgres://orders:dev@postgres.dev.svc:5432/orders?sslmode=disable"
	r := mustInstall(t, values(t, fmt.Sprintf("outbox: {url: %q}\nservices: {outbox-relay: {enabled: true}}", url)))
	for _, svc := range append(keys(targets), relay) {
		got, ok := env(container(t, get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)), "OUTBOX_URL")
		require.Equal(t, svc == relay, ok, svc)
		if ok {
			require.Equal(t, url, got.Value)
		}
	}
	cm := get[corev1.ConfigMap](t, r, "ConfigMap", "herald")
	require.NotContains(t, cm.Data["herald.yaml"], "postgres://", "the ConfigMap is readable more widely than the Deployment")
	require.NotContains(t, cm.Data["herald.yaml"], "outbox")
}

func TestAlertRules(t *testing.T) {
	t.Parallel()
	r := mustInstall(t, values(t, "prometheusRule: {enabled: true}\nservices: {pdf: {enabled: false}}"))
	rule := get[prometheusRule](t, r, "PrometheusRule", "herald")

	// The metrics Herald exports (and kube-state-metrics' and Prometheus's own).
	known := []string{"herald_dlq_depth", "herald_deliveries_total", "herald_consumer_pending",
		"herald_consumer_ack_pending", "herald_quota_events_total", "herald_store_failing", "kube_pod_status_ready", "up"}
	p := parser.NewParser(parser.Options{})
	var alerts []string
	for _, g := range rule.Spec.Groups {
		for _, rl := range g.Rules {
			alerts = append(alerts, rl.Alert)
			expr, err := p.ParseExpr(rl.Expr)
			require.NoErrorf(t, err, "%s: %s", rl.Alert, rl.Expr)
			parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
				vs, ok := node.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				require.Containsf(t, known, vs.Name, "%s reads a metric nobody exports", rl.Alert)
				var ns string
				for _, m := range vs.LabelMatchers {
					if m.Name == "namespace" {
						ns = m.Value
					}
					if m.Name == "job" || m.Name == "pod" {
						require.Truef(t, m.Matches("herald-router") || m.Matches("herald-router-7d9c-x2x4"), "%s: %s", rl.Alert, m)
						require.Falsef(t, m.Matches("herald-pdf") || m.Matches("herald-pdf-7d9c-x2x4"), "%s selects a disabled service", rl.Alert)
						require.False(t, m.Matches("herald-streams-x2x4"), "the hook Job is no service")
					}
				}
				require.Equalf(t, namespace, ns, "%s: %s is not scoped to the release's namespace", rl.Alert, vs)
				return nil
			})
			require.NotEmpty(t, rl.Labels["severity"])
			for k, text := range rl.Annotations {
				// Prometheus expands annotations as Go templates with these
				// variables defined.
				_, err := template.New(k).Funcs(template.FuncMap{"humanizePercentage": fmt.Sprint}).
					Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
				require.NoErrorf(t, err, "%s annotation %s", rl.Alert, k)
			}
		}
	}
	require.ElementsMatch(t, []string{"HeraldDeadLettersGrowing", "HeraldDeadLettersPiledUp", "HeraldDeliveryTriesFailing",
		"HeraldDuplicateSent", "HeraldConsumerLagging", "HeraldTenantQuotaWarning", "HeraldTenantQuotaExceeded", "HeraldStoreFailing", "HeraldPodNotReady", "HeraldServiceDown"}, alerts)
}

func TestSchemaRefusesBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		values string
		want   string // in the error
	}{
		{`services: {router: {replicas: "two"}}`, "/services/router/replicas"},
		{`config: {log: {level: loud}}`, "/config/log/level"},
		{`image: {repository: ""}`, "/image/repository"},
		{`image: {pullPolicy: Sometimes}`, "/image/pullPolicy"},
		{`replica: 2`, "replica"},
		{`services: {fax: {enabled: true}}`, "fax"},
		{`services: {router: {replica: 2}}`, "replica"},
		{`config: {email: {form: "Orders <orders@acme.example>"}}`, "form"},
		{`config: {http: {listen: "0.0.0.0:9090"}}`, "http"},
		{`config: {api: {listen: "0.0.0.0:9090"}}`, "api"},
		{`public: {ingress: {hosts: [herald.example.com]}}`, "hosts"},
		{`public: {ingress: {console: "yes"}}`, "/public/ingress/console"},
		{`config: {nats: {url: "nats://x:4222"}}`, "nats"},
		{`config: {redis: {url: "redis://x"}}`, "url"},
		{`config: {history: {url: "postgres://x/db"}}`, "history"},
		{`history: {url: "sqlite:/tmp/history.db"}`, "/history/url"},
		{`history: {existingSecret: Not_A_Name}`, "/history/existingSecret"},
		{`history: {existingSecretKey: ""}`, "/history/existingSecretKey"},
		{`history: {uri: "postgres://x/db"}`, "uri"},
		{`config: {outbox: {url: "postgres://x/db"}}`, "'/config/outbox': additional properties 'url'"},
		{`outbox: {url: "sqlite:/tmp/outbox.db"}`, "/outbox/url"},
		{`outbox: {url: "mysql://x/db"}`, "/outbox/url"},
		{`outbox: {existingSecret: Not_A_Name}`, "/outbox/existingSecret"},
		{`outbox: {existingSecretKey: ""}`, "/outbox/existingSecretKey"},
		{`config: {outbox: {batch: 0}}`, "/config/outbox/batch"},
		{`config: {outbox: {batch: 20000}}`, "/config/outbox/batch"},
		{`config: {outbox: {poll: "1 second"}}`, "/config/outbox/poll"},
		{`config: {outbox: {retention: 1d}}`, "/config/outbox/retention"},
		{`config: {outbox: {batches: 5}}`, "batches"},
		{`services: {history: {replica: 2}}`, "replica"},
		{`services: {delivery-sms: {replicas: "two"}}`, "/services/delivery-sms/replicas"},
		{`services: {delivery-whatsapp: {enabled: "yes"}}`, "/services/delivery-whatsapp/enabled"},
		{`services: {delivery-webhook: {natsExistingSecret: Not_A_Name}}`, "/services/delivery-webhook/natsExistingSecret"},
		{`services: {delivery-text: {enabled: true}}`, "delivery-text"},
		{`config: {sms: {providers: [{type: twilio, from: "+14155550100"}]}}`, "account_sid"},
		{`config: {sms: {providers: [{type: twilio, account_sid: AC0123456789abcdef0123456789abcdef}]}}`, "/config/sms/providers/0"},
		{`config: {whatsapp: {providers: [{type: textdir}]}}`, "dir"},
		{`config: {sms: {providers: [{type: twilio, account_sid: AC1, from: "+14155550100"}]}}`, "/config/sms/providers/0/account_sid"},
		{`config: {sms: {providers: [{type: twilio, auth_token: secret}]}}`, "auth_token"},
		{`config: {webhooks: {disable_after: "5 days"}}`, "/config/webhooks/disable_after"},
		{`config: {webhook: {concurrency: 2}}`, "webhook"},
		{`config: {log: {format: text}}`, "format"},
		{`config: {email: {timeout: "10 seconds"}}`, "/config/email/timeout"},
		{`config: {email: {providers: [{type: mailgun}]}}`, "/config/email/providers/0/type"},
		{`config: {email: {providers: [{type: smtp}]}}`, "host"},
		{`config: {email: {providers: [{type: sendgrid, api_key: SG.x}]}}`, "api_key"},
		{`config: {streams: {replicas: 7}}`, "/config/streams/replicas"},
		{`config: {router: {routes: [{event: order.created, channels: [pigeon]}]}}`, "/config/router/routes/0/channels/0"},
		{`config: {router: {routes: [{event: order.created, steps: [{wait: {for: 1h, untill_event: order.confirmed}}]}]}}`, "untill_event"},
		{`config: {router: {routes: [{event: order.created, steps: [{send: {}, wait: {for: 1h}}]}]}}`, "/config/router/routes/0/steps/0"},
		{`config: {router: {routes: [{event: order.created, steps: [{wait: {for: 1w}}]}]}}`, "/config/router/routes/0/steps/0/wait/for"},
		{`config: {router: {routes: [{event: order.created, steps: [{wait: {until_status: delivered}}]}]}}`, "/config/router/routes/0/steps/0/wait"},
		{`config: {router: {routes: [{event: order.created, steps: [{digest: {key: x, window: 1h, cron: "0 8 * * *"}}]}]}}`, "/config/router/routes/0/steps/0/digest"},
		{`config: {router: {routes: [{event: order.created, steps: [{window: {from: "8am", to: "20:00"}}]}]}}`, "/config/router/routes/0/steps/0/window/from"},
		{`config: {router: {routes: [{event: order.created, cancel_on: [inventory.restocked], steps: [{send: {channels: [email]}}]}]}}`, "/config/router/routes/0/cancel_on/0"},
		{`secrets: {values: {"not-an-env": x}}`, "not-an-env"},
		{`nats: {url: "http://nats:4222"}`, "/nats/url"},
		{`prometheusRule: {deliveryFailureRatio: 2}`, "/prometheusRule/deliveryFailureRatio"},
		{`prometheusRule: {storeFailingFor: "5 minutes"}`, "/prometheusRule/storeFailingFor"},
		{`extraEnv: [{value: x}]`, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.values, func(t *testing.T) {
			t.Parallel()
			_, err := install(values(t, tt.values))
			require.ErrorContains(t, err, "values don't meet the specifications of the schema")
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// Issue 34's two workflows, as the router's testdata writes them, pass
// the schema: routes whose sends name their channels need none of their own.
func TestSchemaAcceptsTheIssueWorkflows(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "services", "router", "testdata", "workflows.yaml"))
	require.NoError(t, err)
	var file map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &file))
	_, err = install(map[string]any{"config": file})
	require.NoError(t, err)
}

func TestTemplatesRefuseWhatTheSchemaCannotSee(t *testing.T) {
	t.Parallel()
	_, err := install(values(t, "redis: {url: \"\"}"))
	require.ErrorContains(t, err, "redis.url or redis.existingSecret is required")
	_, err = install(values(t, "services: {pdf: {autoscaling: {enabled: true, minReplicas: 5, maxReplicas: 2}}}"))
	require.ErrorContains(t, err, "minReplicas (5) exceeds maxReplicas (2)")
	_, err = install(values(t, "public: {ingress: {enabled: true}}"))
	require.ErrorContains(t, err, "public.ingress.host is required")
	_, err = install(values(t, "services: {history: {enabled: true}}"))
	require.ErrorContains(t, err, "services.history.enabled needs history.existingSecret (or history.url)")
	_, err = install(values(t, "services: {outbox-relay: {enabled: true}}\nhistory: {existingSecret: herald-history}"))
	require.ErrorContains(t, err, "services.outbox-relay.enabled needs outbox.existingSecret (or outbox.url)", "the index is not the outbox")
	_, err = install(values(t, "services: {delivery-sms: {enabled: true}}"))
	require.ErrorContains(t, err, "services.delivery-sms.enabled needs config.sms.providers")
	_, err = install(values(t, "services: {delivery-whatsapp: {enabled: true}}\nconfig: {sms: {providers: [{type: awssms, region: eu-west-1}]}}"))
	require.ErrorContains(t, err, "services.delivery-whatsapp.enabled needs config.whatsapp.providers", "the sms section is not the whatsapp one")
	_, err = install(values(t, "config: {inbox: {enabled: false}}"))
	require.ErrorContains(t, err, "services.delivery-inbox.enabled needs config.inbox.enabled")
	mustInstall(t, values(t, "config: {inbox: {enabled: false}}\nservices: {delivery-inbox: {enabled: false}}"))
	_, err = install(values(t, "services: {delivery-push: {enabled: true}}\nconfig: {push: {concurrency: 4}}"))
	require.ErrorContains(t, err, "services.delivery-push.enabled needs config.push.fcm, config.push.apns or config.push.webpush")
}

// TestSchemaMirrorsHeraldConfig keeps values.schema.json's config section
// key for key equal to Herald's config struct, less what the chart sets
// itself: a key Herald adds must be added to the schema, and the schema must
// never accept a key Herald would refuse at start-up.
func TestSchemaMirrorsHeraldConfig(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(raw, &schema))
	resolve := func(node map[string]any) map[string]any {
		if ref, ok := node["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/definitions/")
			return schema["definitions"].(map[string]any)[name].(map[string]any)
		}
		return node
	}
	var inSchema []string
	var walk func(prefix string, node map[string]any)
	walk = func(prefix string, node map[string]any) {
		node = resolve(node)
		if items, ok := node["items"].(map[string]any); ok {
			node = resolve(items)
		}
		props, ok := node["properties"].(map[string]any)
		if !ok {
			return
		}
		require.Equalf(t, false, node["additionalProperties"], "%s must refuse unknown keys", prefix)
		for k, v := range props {
			inSchema = append(inSchema, prefix+k)
			walk(prefix+k+".", v.(map[string]any))
		}
	}
	walk("", schema["properties"].(map[string]any)["config"].(map[string]any))

	inHerald := yamlKeys("", reflect.TypeFor[app.Config]())
	chartOwned := []string{"nats", "nats.url", "redis.url", "history", "history.url", "outbox.url", "http", "http.listen", "api.listen", "streams.skip_apply", "log.format"}
	for _, k := range chartOwned {
		require.Contains(t, inHerald, k, "Herald no longer has %s: update the chart", k)
	}
	var want []string
	for _, k := range inHerald {
		if !slices.Contains(chartOwned, k) {
			want = append(want, k)
		}
	}
	require.ElementsMatch(t, want, inSchema)
}

// yamlKeys lists the dotted YAML keys a config type decodes.
func yamlKeys(prefix string, typ reflect.Type) []string {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ.PkgPath() == "time" {
		return nil
	}
	var keys []string
	for f := range typ.Fields() {
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if opts == "inline" {
			keys = append(keys, yamlKeys(prefix, f.Type)...)
			continue
		}
		keys = append(keys, prefix+name)
		keys = append(keys, yamlKeys(prefix+name+".", f.Type)...)
	}
	return keys
}

func TestLint(t *testing.T) {
	t.Parallel()
	for name, vals := range map[string]map[string]any{"defaults": nil, "production": production(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kube := &chartutil.KubeVersion{Version: "v1.33.0", Major: "1", Minor: "33"}
			result := lint.AllWithKubeVersion(chartDir, vals, namespace, kube)
			for _, m := range result.Messages {
				require.LessOrEqualf(t, m.Severity, support.InfoSev, "%s", m)
			}
		})
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	notes := mustInstall(t, nil).notes
	require.Contains(t, notes, "kubectl -n notify logs job/herald-streams")
	require.Contains(t, notes, "exec deploy/herald-dlq -- /herald dlq list")
	require.Contains(t, notes, "config.email.from is not set")
	require.Contains(t, notes, "GET /v1/notifications answers 503")

	notes = mustInstall(t, production(t)).notes
	require.NotContains(t, notes, "WARNING")
	require.Contains(t, notes, "3–12 replicas (HPA)")
	require.Contains(t, notes, "the Ingress for herald.acme.example")
	require.Contains(t, notes, "history           herald run history   2 replica(s)")
	require.Contains(t, notes, "delivery-whatsapp herald run whatsapp   2 replica(s)")
	require.Contains(t, notes, "delivery-webhook  herald run webhook   2–6 replicas (HPA)")
	require.Contains(t, notes, "workflow          herald run workflow   2 replica(s)")
	require.NotContains(t, notes, "GET /v1/notifications answers 503")

	notes = mustInstall(t, values(t, "history: {existingSecret: herald-history}")).notes
	require.Contains(t, notes, "services.history is disabled: the api lists\nfrom an index nothing in this release keeps up to date")
}

// The notes say which scheduling the release runs, and how an upgrade
// from the other converted: by the hook before the new pods, or — with the
// hook disabled — by the first new pod.
func TestNotesSayHowTheSchedulingConverts(t *testing.T) {
	t.Parallel()
	notes := mustInstall(t, nil).notes
	require.Contains(t, notes, "Scheduling: fair (config.scheduling.fair: true)")
	require.Contains(t, notes, "On an upgrade from first come, first served")
	require.Contains(t, notes, "the hook Job removed\nthe shared consumers (NOTIFY > email-normal, …) before the new pods served")

	notes = mustInstall(t, values(t, "{config: {scheduling: {fair: false}}, streamsJob: {enabled: false}}")).notes
	require.Contains(t, notes, "Scheduling: first come, first served (config.scheduling.fair: false)")
	require.Contains(t, notes, "On an upgrade from fair scheduling,\nthe first new pod to start (streamsJob is disabled) removed the tenants' consumers")
}

func TestNotesSayWhatTheNewerChannelsLack(t *testing.T) {
	t.Parallel()
	notes := mustInstall(t, nil).notes
	require.Contains(t, notes, "delivery-webhook  herald run webhook   1 replica(s)")
	require.NotContains(t, notes, "delivery-sms ", "off by default")
	require.Contains(t, notes, "NOTE: no vault master key (HERALD_MASTER_KEY)")

	notes = mustInstall(t, values(t, "config: {sms: {providers: [{type: awssms, region: eu-west-1}]}}")).notes
	require.Contains(t, notes, "WARNING: config.sms.providers is set but services.delivery-sms is disabled")
	require.NotContains(t, notes, "config.whatsapp.providers is set")

	notes = mustInstall(t, values(t, `
config:
  sms: {providers: [{type: awssms, region: eu-west-1}]}
  vault: {master_key_env: VAULT_KEY}
services: {delivery-sms: {enabled: true}, delivery-email: {enabled: false}}
secrets: {create: true, values: {VAULT_KEY: x}}
`)).notes
	require.NotContains(t, notes, "delivery-sms is disabled")
	require.Contains(t, notes, "delivery-sms      herald run sms   1 replica(s)")
	require.NotContains(t, notes, "no vault master key")
	require.NotContains(t, notes, "WARNING: no provider credentials")

	notes = mustInstall(t, values(t, "config: {whatsapp: {providers: [{type: textdir, dir: /tmp/wa}]}}\nservices: {delivery-whatsapp: {enabled: true}, delivery-email: {enabled: false}}")).notes
	require.Contains(t, notes, "WARNING: no provider credentials", "whatsapp sends through a provider too")
}

// The SMS and WhatsApp workers deploy like every other service once their
// providers are named: the same image and probes, Redis for their leases,
// the provider secrets by reference, their own NATS user if given one; and
// Herald accepts the configuration file they share.
func TestTextChannelsDeployWithTheirProviders(t *testing.T) {
	t.Parallel()
	const token = "twiliotokenneverinamanifest0123"
	r := mustInstall(t, values(t, fmt.Sprintf(`
config:
  email: {from: "Orders <orders@acme.example>", providers: [{type: maildir, dir: /tmp/mail}]}
  sms:
    concurrency: 4
    providers:
      - {type: twilio, account_sid: AC0123456789abcdef0123456789abcdef, from: "+14155550100", auth_token_env: TWILIO_AUTH_TOKEN}
      - {type: awssms, region: eu-west-1, access_key_id_env: SMS_AWS_ACCESS_KEY_ID, secret_access_key_env: SMS_AWS_SECRET_ACCESS_KEY}
  whatsapp:
    providers: [{type: twilio, account_sid: AC0123456789abcdef0123456789abcdef, messaging_service_sid: MG0123456789abcdef0123456789abcdef}]
  webhooks: {concurrency: 2, disable_after: 48h}
redis: {existingSecret: herald-redis}
secrets:
  existingSecret: herald-prod
  create: true
  values: {TWILIO_AUTH_TOKEN: %q}
serviceMonitor: {enabled: true}
services:
  delivery-sms: {enabled: true, replicas: 3, natsExistingSecret: herald-nats-sms}
  delivery-whatsapp: {enabled: true, autoscaling: {enabled: true, minReplicas: 2, maxReplicas: 4}}
  delivery-webhook: {natsExistingSecret: herald-nats-webhook}
`, token)))

	sm := get[serviceMonitor](t, r, "ServiceMonitor", "herald")
	scraped, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
	require.NoError(t, err)
	for svc, target := range map[string]string{"delivery-sms": "sms", "delivery-whatsapp": "whatsapp", "delivery-webhook": "webhook"} {
		t.Run(svc, func(t *testing.T) {
			d := get[appsv1.Deployment](t, r, "Deployment", "herald-"+svc)
			c := container(t, d)
			require.Equal(t, []string{"run", target, "--shutdown-timeout=30s"}, c.Args)
			require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
			mountsConfig(t, d, "herald")
			require.Equal(t, svc, d.Spec.Template.Labels["app.kubernetes.io/component"])

			redis, ok := env(c, "REDIS_URL")
			require.True(t, ok, "the workers lease each notification in Redis")
			require.Equal(t, "herald-redis", redis.ValueFrom.SecretKeyRef.Name)
			_, ok = env(c, "HISTORY_URL")
			require.False(t, ok)
			var refs []string
			for _, e := range c.EnvFrom {
				refs = append(refs, e.SecretRef.Name)
			}
			require.Equal(t, []string{"herald-prod", "herald-secrets"}, refs, "TWILIO_AUTH_TOKEN and the AWS keys come from the Secrets")
			b, err := json.Marshal(d)
			require.NoError(t, err)
			require.NotContains(t, string(b), token)

			nats, ok := env(c, "NATS_URL")
			require.True(t, ok)
			if want := map[string]string{"delivery-sms": "herald-nats-sms", "delivery-webhook": "herald-nats-webhook"}[svc]; want != "" {
				require.Empty(t, nats.Value)
				require.Equal(t, want, nats.ValueFrom.SecretKeyRef.Name)
			} else {
				require.Equal(t, "nats://nats.nats.svc.cluster.local:4222", nats.Value)
			}

			s := get[corev1.Service](t, r, "Service", "herald-"+svc)
			selects(t, s.Spec.Selector, d)
			require.True(t, scraped.Matches(labels.Set(s.Labels)), "Prometheus scrapes %s", svc)
			public := labels.SelectorFromSet(get[corev1.Service](t, r, "Service", "herald-public").Spec.Selector)
			require.False(t, public.Matches(labels.Set(d.Spec.Template.Labels)), "%s takes no public requests", svc)
		})
	}
	require.Equal(t, int32(3), *get[appsv1.Deployment](t, r, "Deployment", "herald-delivery-sms").Spec.Replicas)
	require.Nil(t, get[appsv1.Deployment](t, r, "Deployment", "herald-delivery-whatsapp").Spec.Replicas, "the HPA owns it")
	require.Equal(t, []string{"herald-delivery-whatsapp"}, r.ofKind("HorizontalPodAutoscaler"))
	require.Equal(t, []string{"herald-delivery-sms", "herald-delivery-whatsapp"}, r.ofKind("PodDisruptionBudget"))
	for _, name := range r.ofKind("PodDisruptionBudget") {
		selects(t, get[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget", name).Spec.Selector.MatchLabels,
			get[appsv1.Deployment](t, r, "Deployment", name))
	}

	// Herald starts each of them on the file, given the secrets it names.
	cfg := loadConfig(t, r)
	require.Equal(t, 2, cfg.Webhooks.Concurrency)
	env := map[string]string{"TWILIO_AUTH_TOKEN": token, "SMS_AWS_ACCESS_KEY_ID": "AKIA-TEST", "SMS_AWS_SECRET_ACCESS_KEY": "secret"}
	require.ElementsMatch(t, keys(env), secretNames(cfg))
	cfg.Getenv = func(name string) string { return env[name] }
	cfg.Redis.URL = "redis://127.0.0.1:1/0"
	cfg.Services = []string{"sms", "whatsapp", "webhook"}
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, a.Stop(t.Context()))
}

// The push workers deploy like the text channels' once a provider is
// named: the image and probes, Redis for their leases, the provider keys
// from the Secrets by reference, their own NATS user; Herald starts push on
// the file, given the key it names. A provider named with the workers off
// is warned about.
func TestPushDeploysWithItsProvider(t *testing.T) {
	t.Parallel()
	private, public, err := webpush.GenerateVAPIDKeys()
	require.NoError(t, err)
	r := mustInstall(t, values(t, fmt.Sprintf(`
config:
  push:
    concurrency: 4
    webpush: {vapid_public_key: %q, vapid_private_key_env: VAPID_PRIVATE_KEY, contact: "mailto:ops@acme.example"}
redis: {existingSecret: herald-redis}
secrets: {existingSecret: herald-prod}
services:
  delivery-push: {enabled: true, replicas: 2, natsExistingSecret: herald-nats-push}
`, public)))
	d := get[appsv1.Deployment](t, r, "Deployment", "herald-delivery-push")
	c := container(t, d)
	require.Equal(t, []string{"run", "push", "--shutdown-timeout=30s"}, c.Args)
	require.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.Equal(t, int32(2), *d.Spec.Replicas)
	mountsConfig(t, d, "herald")
	redis, ok := env(c, "REDIS_URL")
	require.True(t, ok, "the workers lease each notification in Redis")
	require.Equal(t, "herald-redis", redis.ValueFrom.SecretKeyRef.Name)
	nats, ok := env(c, "NATS_URL")
	require.True(t, ok)
	require.Equal(t, "herald-nats-push", nats.ValueFrom.SecretKeyRef.Name)
	require.Equal(t, "herald-prod", c.EnvFrom[0].SecretRef.Name, "VAPID_PRIVATE_KEY comes from the Secret")
	b, err := json.Marshal(d)
	require.NoError(t, err)
	require.NotContains(t, string(b), private)
	selects(t, get[corev1.Service](t, r, "Service", "herald-delivery-push").Spec.Selector, d)
	require.NotContains(t, r.notes, "services.delivery-push is disabled")

	cfg := loadConfig(t, r)
	cfg.Getenv = func(name string) string { return map[string]string{"VAPID_PRIVATE_KEY": private}[name] }
	cfg.Redis.URL = "redis://127.0.0.1:1/0"
	cfg.Services = []string{"push"}
	a, err := app.New(cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.NoError(t, a.Stop(t.Context()))

	notes := mustInstall(t, values(t, fmt.Sprintf(`config: {push: {webpush: {vapid_public_key: %q, vapid_private_key_env: VAPID_PRIVATE_KEY, contact: "mailto:ops@acme.example"}}}`, public))).notes
	require.Contains(t, notes, "WARNING: config.push names a provider but services.delivery-push is disabled")
}

// A Service's name is a DNS label, and so is every per-service name (the
// component label carries it): however long the release's name, each
// service's resources are named within 63 characters, and the names the
// chart always gave (delivery-email's and shorter) are not changed by the
// longer ones.
func TestLongReleaseNamesFit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 60)
	r := mustInstall(t, values(t, fmt.Sprintf(`
fullnameOverride: %s
config: {sms: {providers: [{type: awssms, region: eu-west-1}]}, whatsapp: {providers: [{type: textdir, dir: /tmp/wa}]}, push: {apns: {key_env: APNS_KEY, key_id: ABC123DEFG, team_id: DEF123GHIJ, topic: com.example.app}}}
outbox: {existingSecret: herald-outbox}
services: {delivery-sms: {enabled: true}, delivery-whatsapp: {enabled: true}, delivery-push: {enabled: true}, outbox-relay: {enabled: true}}
`, long)))
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		for _, name := range r.ofKind(kind) {
			if !strings.HasSuffix(name, "-public") { // not a service's: the release's full name, uncut
				require.LessOrEqual(t, len(name), 63, kind+"/"+name)
			}
		}
	}
	for _, svc := range append(keys(everyTarget), relay) {
		if svc == "history" {
			continue
		}
		d := get[appsv1.Deployment](t, r, "Deployment", fmt.Sprintf("%.*s-%s", min(48, 62-len(svc)), long, svc))
		require.Equal(t, svc, d.Spec.Template.Labels["app.kubernetes.io/component"])
	}
	require.True(t, r.has("Deployment", long[:48]+"-delivery-email"), "as before")
	require.True(t, r.has("Deployment", long[:45]+"-delivery-whatsapp"))
	require.True(t, r.has("Deployment", long[:48]+"-outbox-relay"))
}

func TestNATSValuesDescribeAThreeNodeJetStreamCluster(t *testing.T) {
	t.Parallel()
	// The keys of the official NATS chart (1.x) that README.md relies on.
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "docs", "nats-values.yaml"))
	require.NoError(t, err)
	for path, want := range map[string]any{
		"config.cluster.enabled":                 true,
		"config.cluster.replicas":                float64(3),
		"config.jetstream.enabled":               true,
		"config.jetstream.fileStore.enabled":     true,
		"config.jetstream.fileStore.dir":         "/data",
		"config.jetstream.fileStore.pvc.enabled": true,
		"config.jetstream.fileStore.pvc.size":    "20Gi",
		"config.jetstream.memoryStore.enabled":   false,
		"promExporter.enabled":                   true,
	} {
		got, err := v.PathValue(path)
		require.NoError(t, err, path)
		require.EqualValues(t, want, got, path)
	}
}

// The NATS the README installs has message schedules, which Herald refuses
// to start without: nats-values.yaml pins a nats-server 2.14 or newer, the
// release Herald's tests run on (go.mod's nats-server).
func TestNATSValuesPinAServerWithMessageSchedules(t *testing.T) {
	t.Parallel()
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "docs", "nats-values.yaml"))
	require.NoError(t, err)
	tag, err := v.PathValue("container.image.tag")
	require.NoError(t, err, "the image is pinned, not the NATS chart's default")
	version, ok := strings.CutSuffix(fmt.Sprint(tag), "-alpine")
	require.True(t, ok, "an official nats image tag: %v", tag)
	require.NoError(t, streams.CheckServerVersion(version))
	require.Equal(t, server.VERSION, version, "the release the tests run on")
}
