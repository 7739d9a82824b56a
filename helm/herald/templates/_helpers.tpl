{{/*
Names. Kubernetes names are DNS labels: at most 63 characters.
*/}}
{{- define "herald.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "herald.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The name of one service's resources: (list $ "delivery-email"). The release's
name is cut to leave room for the service's within 63 characters: to 48 for
names up to delivery-email's (as it always was, so no resource is renamed),
shorter for longer ones (delivery-whatsapp).
*/}}
{{- define "herald.componentName" -}}
{{- $root := index . 0 }}
{{- $name := index . 1 }}
{{- printf "%s-%s" (include "herald.fullname" $root | trunc (min 48 (sub 62 (len $name)) | int) | trimSuffix "-") $name }}
{{- end }}

{{- define "herald.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "herald.labels" -}}
helm.sh/chart: {{ include "herald.chart" . }}
{{ include "herald.selectorLabels" . }}
app.kubernetes.io/version: {{ include "herald.imageTag" . | trunc 63 | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: herald
{{- end }}

{{- define "herald.selectorLabels" -}}
app.kubernetes.io/name: {{ include "herald.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The services this chart deploys: values key → `herald run` target, whether
the service uses Redis (delivery's leases, the DLQ sweeper's election), and
whether it uses the notification index: "required" (the history service
fills it and refuses to start without it), "optional" (the api lists from it
when history.* is set, and answers listings with 503 otherwise) or "none".
outbox is whether it publishes from the transactional outbox (outbox.*):
only the outbox relay, which refuses to start without it. A service is
given REDIS_URL, HISTORY_URL or OUTBOX_URL only if it uses them: its
readiness must not depend on a server it never talks to, nor its
environment hold a password it does not need. providers names the config
section whose providers a text channel's workers need (they refuse to start
without one): enabling the service without them fails the release. public
is whether the service answers outsiders on the public port (8081): only
the api (the API, document and unsubscribe links, the providers' webhooks,
the console) does, and a process of workers does not open that port at all
(Herald's app.ServesOutsiders), so no other Deployment declares it.
*/}}
{{- define "herald.targets" -}}
router:
  target: router
  redis: false
  history: none
  outbox: false
  public: false
workflow:
  target: workflow
  redis: false
  history: none
  outbox: false
  public: false
delivery-email:
  target: delivery
  redis: true
  history: none
  outbox: false
  public: false
pdf:
  target: pdf
  redis: false
  history: none
  outbox: false
  public: false
dlq:
  target: dlq
  redis: true
  history: none
  outbox: false
  public: false
api:
  target: api
  redis: false
  history: optional
  outbox: false
  public: true
history:
  target: history
  redis: false
  history: required
  outbox: false
  public: false
delivery-sms:
  target: sms
  redis: true
  history: none
  outbox: false
  public: false
  providers: sms
delivery-whatsapp:
  target: whatsapp
  redis: true
  history: none
  outbox: false
  public: false
  providers: whatsapp
delivery-push:
  target: push
  redis: true
  history: none
  outbox: false
  public: false
  pushProviders: true
delivery-inbox:
  target: inbox
  redis: true
  history: none
  outbox: false
  public: false
  inbox: true
delivery-webhook:
  target: webhook
  redis: true
  history: none
  outbox: false
  public: false
outbox-relay:
  target: outbox-relay
  redis: false
  history: none
  outbox: true
  public: false
{{- end }}

{{- define "herald.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "herald.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "herald.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "herald.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "herald.imageTag" .) }}
{{- end }}
{{- end }}

{{- define "herald.secretName" -}}
{{- printf "%s-secrets" (include "herald.fullname" .) }}
{{- end }}

{{/*
Herald's configuration file: the values' config, with what the chart owns
laid over it. The services listen on every interface (Kubernetes probes and
scrapes come from outside the pod): operations on 8080 (port "http"), the
public listener on 8081 (port "public"). They log JSON, and leave the streams
to the hook Job. history: is dropped, and outbox.url: both URLs carry a
password, and come from history.* and outbox.* as HISTORY_URL and OUTBOX_URL
to the services that use them. outbox's other keys (batch, poll, retention)
stay.
*/}}
{{- define "herald.config" -}}
{{- $owned := dict
  "http" (dict "listen" "0.0.0.0:8080")
  "api" (dict "listen" "0.0.0.0:8081")
  "log" (dict "format" "json")
  "streams" (dict "skip_apply" .Values.streamsJob.enabled)
}}
{{- $values := omit (deepCopy .Values.config) "history" }}
{{- with $values.outbox }}
{{- $outbox := omit . "url" }}
{{- if $outbox }}
{{- $_ := set $values "outbox" $outbox }}
{{- else }}
{{- $_ := unset $values "outbox" }}
{{- end }}
{{- end }}
{{- $config := mustMergeOverwrite $values $owned }}
{{- toYaml $config }}
{{- end }}

{{/* NATS_URL, from the value or the Secret. */}}
{{- define "herald.natsEnv" -}}
- name: NATS_URL
{{- if .Values.nats.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.nats.existingSecret }}
      key: {{ .Values.nats.existingSecretKey }}
{{- else }}
  value: {{ required "nats.url or nats.existingSecret is required" .Values.nats.url | quote }}
{{- end }}
{{- end }}

{{/* REDIS_URL, from the value or the Secret. */}}
{{- define "herald.redisEnv" -}}
- name: REDIS_URL
{{- if .Values.redis.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.redis.existingSecret }}
      key: {{ .Values.redis.existingSecretKey }}
{{- else }}
  value: {{ required "redis.url or redis.existingSecret is required: the delivery services and dlq need Redis" .Values.redis.url | quote }}
{{- end }}
{{- end }}

{{/* Whether history.* names the notification index. */}}
{{- define "herald.historyConfigured" -}}
{{- if or .Values.history.existingSecret .Values.history.url }}true{{ end }}
{{- end }}

{{/*
HISTORY_URL for a service that uses the index (its "history" in
herald.targets: (list $ "required")): from the Secret or the value; required
fails the release when the index is missing, optional leaves it out.
*/}}
{{- define "herald.historyEnv" -}}
{{- $root := index . 0 }}
{{- $use := index . 1 }}
{{- $history := $root.Values.history }}
{{- if and (eq $use "required") (not (include "herald.historyConfigured" $root)) }}
{{- fail "services.history.enabled needs history.existingSecret (or history.url): the history service fills the notification index, a PostgreSQL database (docs/operating.md, Notification history)" }}
{{- end }}
{{- if and (ne $use "none") (include "herald.historyConfigured" $root) }}
- name: HISTORY_URL
{{- if $history.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ $history.existingSecret }}
      key: {{ $history.existingSecretKey }}
{{- else }}
  value: {{ $history.url | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* Whether outbox.* names the transactional outbox. */}}
{{- define "herald.outboxConfigured" -}}
{{- if or .Values.outbox.existingSecret .Values.outbox.url }}true{{ end }}
{{- end }}

{{/*
OUTBOX_URL, for the outbox relay only (its "outbox" in herald.targets): from
the Secret or the value. The relay refuses to start without it, so the
release fails instead.
*/}}
{{- define "herald.outboxEnv" -}}
{{- if not (include "herald.outboxConfigured" .) }}
{{- fail "services.outbox-relay.enabled needs outbox.existingSecret (or outbox.url): the relay publishes the rows of herald_outbox, in the publishers' PostgreSQL database (docs/publishing.md, Through a transactional outbox)" }}
{{- end }}
- name: OUTBOX_URL
{{- if .Values.outbox.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.outbox.existingSecret }}
      key: {{ .Values.outbox.existingSecretKey }}
{{- else }}
  value: {{ .Values.outbox.url | quote }}
{{- end }}
{{- end }}

{{/* The Secrets whose keys become environment variables. */}}
{{- define "herald.envFrom" -}}
{{- if .Values.secrets.existingSecret }}
- secretRef:
    name: {{ .Values.secrets.existingSecret }}
{{- end }}
{{- if .Values.secrets.create }}
- secretRef:
    name: {{ include "herald.secretName" . }}
{{- end }}
{{- with .Values.extraEnvFrom }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The fewest replicas a service runs with. */}}
{{- define "herald.minReplicas" -}}
{{- if .autoscaling.enabled }}{{ .autoscaling.minReplicas }}{{ else }}{{ .replicas }}{{ end }}
{{- end }}

{{/*
The label of the pods behind the public Service: those of the services that
answer outsiders (public in herald.targets), and nothing else — the workers'
pods, the streams Job's pod — carries it.
*/}}
{{- define "herald.publicLabel" -}}
herald.io/public: "true"
{{- end }}

{{/* Whether an enabled service answers outsiders: only then is there a public port to reach. */}}
{{- define "herald.publicServed" -}}
{{- range $name, $t := include "herald.targets" . | fromYaml }}
{{- if and $t.public (index $.Values.services $name).enabled }}true{{ end }}
{{- end }}
{{- end }}

{{/*
herald.pushConfigured is non-empty when config.push names a provider: the
push workers refuse to start without one, and the router sends push only
then.
*/}}
{{- define "herald.pushConfigured" -}}
{{- $push := .Values.config.push | default dict }}
{{- if or $push.fcm $push.apns $push.webpush }}true{{ end }}
{{- end }}
