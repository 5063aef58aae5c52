{{/* The objects' name: the release's, or RELEASE-thumbd. */}}
{{- define "thumbd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "thumbd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "thumbd.labels" -}}
{{ include "thumbd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* thumbd:FLAVOUR, REPO:VERSION-FLAVOUR, or REPO@DIGEST (image.digest, else the flavour's image.digests). */}}
{{- define "thumbd.image" -}}
{{- $i := .Values.image -}}
{{- if not (has $i.flavour (list "slim" "scratch")) -}}
{{- fail (printf "image.flavour %q: want slim or scratch" $i.flavour) -}}
{{- end -}}
{{- $digest := $i.digest | default (get ($i.digests | default dict) $i.flavour) -}}
{{- if $digest -}}
{{- printf "%s@%s" $i.repository $digest -}}
{{- else if eq $i.tag "latest" -}}
{{- fail "image.tag latest: pin a version (VERSION gives VERSION-FLAVOUR) or a digest" -}}
{{- else if $i.tag -}}
{{- printf "%s:%s-%s" $i.repository $i.tag $i.flavour -}}
{{- else -}}
{{- printf "%s:%s" $i.repository $i.flavour -}}
{{- end -}}
{{- end -}}

{{/* A directory location (not s3://) and the volume that holds it. */}}
{{- define "thumbd.directory" -}}
{{- $loc := index . 0 -}}{{- $name := index . 1 -}}{{- $volume := index . 2 -}}
{{- if and $loc (not (hasPrefix "s3://" $loc)) -}}
{{- if not (hasPrefix "/" $loc) -}}
{{- fail (printf "%s.location %q: want s3://BUCKET[/PREFIX] or an absolute directory path" $name $loc) -}}
{{- end -}}
{{- if not $volume -}}
{{- fail (printf "%s.location %q is a directory: give %s.volume, the volume that holds it (the root filesystem is read-only)" $name $loc $name) -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/* The settings ConfigMap's data: k8s/base/settings.env, then what the
values set. Secrets are never here (they come from Secrets, in env). */}}
{{- define "thumbd.settings" -}}
{{- $v := .Values -}}
{{- if not (has $v.engine (list "inprocess" "cells")) -}}
{{- fail (printf "engine %q: want inprocess or cells" $v.engine) -}}
{{- end -}}
{{- range $name := list "THUMBD_SIGNING_KEYS" "AWS_SECRET_ACCESS_KEY" "AWS_SESSION_TOKEN" "AWS_ACCESS_KEY_ID" "THUMBD_IMGPROXY_KEY" "THUMBD_IMGPROXY_SALT" "THUMBD_IMGPROXY_KEYS" "THUMBD_IMGPROXY_SALTS" -}}
{{- if hasKey $v.settings $name -}}
{{- fail (printf "settings.%s: secrets come from an existing Secret (signing.existingSecret, s3.existingSecret, imgproxy.existingSecret), never from values" $name) -}}
{{- end -}}
{{- end -}}
{{- $imgproxyUnsigned := or $v.imgproxy.unsigned (eq (toString (get $v.settings "THUMBD_IMGPROXY_UNSIGNED")) "true") -}}
{{- if and $v.imgproxy.enabled $v.signing.existingSecret (not $v.imgproxy.existingSecret) (not $imgproxyUnsigned) -}}
{{- fail "imgproxy.enabled with signing.existingSecret and no imgproxy.existingSecret: imgproxy's URLs would be served unsigned beside the signed ones, and thumbd does not start so; give imgproxy.existingSecret (its key and salt), or imgproxy.unsigned: true if that is meant" -}}
{{- end -}}
{{- $s := dict "THUMBD_CONCURRENCY" (toString $v.cpus) "THUMBD_SHUTDOWN_DELAY" "5s" "THUMBD_SANDBOX_REQUIRED" "true" -}}
{{- if gt (int $v.adminPort) 0 -}}{{- $_ := set $s "THUMBD_ADMIN_PORT" (toString $v.adminPort) -}}{{- end -}}
{{- if eq $v.engine "cells" -}}
{{- $_ := set $s "THUMBD_ENGINE" "cells" -}}
{{- $_ := set $s "THUMBD_CELL_MAX_RSS" (toString (int64 $v.cells.maxRSS)) -}}
{{- end -}}
{{- with $v.source.location -}}{{- $_ := set $s "THUMBD_SOURCE" . -}}{{- end -}}
{{- with $v.resultStore.location -}}{{- $_ := set $s "THUMBD_RESULT_STORE" . -}}{{- end -}}
{{- with $v.s3.region -}}{{- $_ := set $s "AWS_REGION" . -}}{{- end -}}
{{- with $v.s3.endpoint -}}{{- $_ := set $s "AWS_ENDPOINT_URL_S3" . -}}{{- end -}}
{{- with $v.origins -}}{{- $_ := set $s "THUMBD_ORIGINS" . -}}{{- end -}}
{{- if not $v.uploads -}}{{- $_ := set $s "THUMBD_UPLOADS" "false" -}}{{- end -}}
{{- if not $v.benchRoutes -}}{{- $_ := set $s "THUMBD_BENCH_ROUTES" "false" -}}{{- end -}}
{{- with $v.presets -}}{{- $_ := set $s "THUMBD_PRESETS" . -}}{{- end -}}
{{- if $v.imgproxy.enabled -}}
{{- $_ := set $s "THUMBD_IMGPROXY" "true" -}}
{{- with $v.imgproxy.prefix -}}{{- $_ := set $s "THUMBD_IMGPROXY_PREFIX" . -}}{{- end -}}
{{- with $v.imgproxy.presets -}}{{- $_ := set $s "THUMBD_IMGPROXY_PRESETS" . -}}{{- end -}}
{{- if $v.imgproxy.autoFormat -}}{{- $_ := set $s "THUMBD_IMGPROXY_AUTO_FORMAT" "true" -}}{{- end -}}
{{- if $v.imgproxy.unsigned -}}{{- $_ := set $s "THUMBD_IMGPROXY_UNSIGNED" "true" -}}{{- end -}}
{{- end -}}
{{- if $v.presetsOnly -}}{{- $_ := set $s "THUMBD_PRESETS_ONLY" "true" -}}{{- end -}}
{{- with $v.allowedWidths -}}{{- $_ := set $s "THUMBD_ALLOWED_WIDTHS" (join "," .) -}}{{- end -}}
{{- with $v.allowedQualities -}}{{- $_ := set $s "THUMBD_ALLOWED_QUALITIES" (join "," .) -}}{{- end -}}
{{- with $v.allowedTransforms -}}{{- $_ := set $s "THUMBD_ALLOWED_TRANSFORMS" (join ";" .) -}}{{- end -}}
{{- with $v.tracing.endpoint -}}{{- $_ := set $s "OTEL_EXPORTER_OTLP_ENDPOINT" . -}}{{- end -}}
{{- with $v.tracing.sampler -}}{{- $_ := set $s "OTEL_TRACES_SAMPLER" . -}}{{- end -}}
{{- with $v.tracing.samplerArg -}}{{- $_ := set $s "OTEL_TRACES_SAMPLER_ARG" (toString .) -}}{{- end -}}
{{- with $v.tracing.resourceAttributes -}}{{- $_ := set $s "OTEL_RESOURCE_ATTRIBUTES" . -}}{{- end -}}
{{- range $k, $val := $v.settings -}}{{- $_ := set $s $k (toString $val) -}}{{- end -}}
{{- toYaml $s -}}
{{- end -}}

{{/* The probes' port: probes.port, else the admin port's name, else http. */}}
{{- define "thumbd.probePort" -}}
{{- .Values.probes.port | default (ternary "admin" "http" (gt (int .Values.adminPort) 0)) -}}
{{- end -}}

{{/* The ServiceMonitor's Service port: serviceMonitor.port, else admin or http. */}}
{{- define "thumbd.metricsPort" -}}
{{- .Values.serviceMonitor.port | default (ternary "admin" "http" (gt (int .Values.adminPort) 0)) -}}
{{- end -}}

{{/* A NetworkPolicy ingress peer, as a one-entry list, from
networkPolicy.ingress.NAME's namespace and pod labels; neither is refused
(an empty peer would let in every pod of the namespace, or none). */}}
{{- define "thumbd.ingressPeer" -}}
{{- $name := index . 0 -}}{{- $from := index . 1 -}}
{{- if not (or $from.namespaceLabels $from.podLabels) -}}
{{- fail (printf "networkPolicy.ingress.%s: give namespaceLabels, podLabels or both: the sources the policy lets in" $name) -}}
{{- end -}}
{{- $peer := dict -}}
{{- with $from.namespaceLabels -}}{{- $_ := set $peer "namespaceSelector" (dict "matchLabels" .) -}}{{- end -}}
{{- with $from.podLabels -}}{{- $_ := set $peer "podSelector" (dict "matchLabels" .) -}}{{- end -}}
{{- toYaml (list $peer) -}}
{{- end -}}
