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

{{/* The name of one service's resources: (list $ "delivery-email"). */}}
{{- define "herald.componentName" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "herald.fullname" $root | trunc 48 | trimSuffix "-") (index . 1) }}
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
The services this chart deploys: values key → `herald run` target, and
whether the service uses Redis (delivery's leases, the DLQ sweeper's
election). Router and pdf are not given REDIS_URL: their readiness must not
depend on a Redis they never use.
*/}}
{{- define "herald.targets" -}}
router:
  target: router
  redis: false
delivery-email:
  target: delivery
  redis: true
pdf:
  target: pdf
  redis: false
dlq:
  target: dlq
  redis: true
api:
  target: api
  redis: false
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
to the hook Job.
*/}}
{{- define "herald.config" -}}
{{- $owned := dict
  "http" (dict "listen" "0.0.0.0:8080")
  "api" (dict "listen" "0.0.0.0:8081")
  "log" (dict "format" "json")
  "streams" (dict "skip_apply" .Values.streamsJob.enabled)
}}
{{- $config := mustMergeOverwrite (deepCopy .Values.config) $owned }}
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
  value: {{ required "redis.url or redis.existingSecret is required: the delivery-email and dlq services need Redis" .Values.redis.url | quote }}
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
The label of the pods behind the public Service: every service's pods serve
document links on their public port (any of them can read the object store),
and nothing else — the streams Job's pod — carries it.
*/}}
{{- define "herald.publicLabel" -}}
herald.io/public: "true"
{{- end }}
