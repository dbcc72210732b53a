{{- define "arcane-mcp.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "arcane-mcp.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "arcane-mcp.selectorLabels" -}}
app.kubernetes.io/name: {{ include "arcane-mcp.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "arcane-mcp.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "arcane-mcp.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "arcane-mcp.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "arcane-mcp.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Host values the server answers to: the operator's, the ingress hosts, the Service's
names (in-cluster clients) and the pod's IP (the kubelet's probes, Prometheus), which the
container's env expands from POD_IP. Entries without a port allow any port. */}}
{{- define "arcane-mcp.allowedHosts" -}}
{{- $fullname := include "arcane-mcp.fullname" . -}}
{{- $hosts := list -}}
{{- range .Values.allowedHosts }}{{ $hosts = append $hosts . }}{{ end -}}
{{- if .Values.ingress.enabled }}{{ range .Values.ingress.hosts }}{{ $hosts = append $hosts .host }}{{ end }}{{ end -}}
{{- $hosts = append $hosts $fullname -}}
{{- $hosts = append $hosts (printf "%s.%s" $fullname .Release.Namespace) -}}
{{- $hosts = append $hosts (printf "%s.%s.svc" $fullname .Release.Namespace) -}}
{{- $hosts = append $hosts (printf "%s.%s.svc.cluster.local" $fullname .Release.Namespace) -}}
{{- $hosts = append $hosts "$(POD_IP)" -}}
{{- $hosts | uniq | join "," -}}
{{- end -}}
