{{- define "lodestore.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "lodestore.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "lodestore.serviceAccountName" -}}
{{- include "lodestore.fullname" . -}}
{{- end -}}

{{/* The Lease the replicas elect a leader with; the RBAC names it, the args pass it. */}}
{{- define "lodestore.leaseName" -}}
lodestore-controller
{{- end -}}

{{- define "lodestore.labels" -}}
{{ include "lodestore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: lodestore
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "lodestore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lodestore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lodestore.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
Seconds of a controller duration ("15s", "2m", "1h"; one unit, as lode-controller
reads them). values.schema.json has already checked the form.
*/}}
{{- define "lodestore.seconds" -}}
{{- $n := regexFind "^[0-9]+" . | atoi -}}
{{- $unit := trimPrefix (regexFind "^[0-9]+" .) . -}}
{{- $mult := get (dict "s" 1 "m" 60 "h" 3600 "d" 86400 "w" 604800 "y" 31536000) $unit -}}
{{- mul $n $mult -}}
{{- end -}}
