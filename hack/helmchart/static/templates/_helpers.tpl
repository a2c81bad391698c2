{{/* Written by hand in hack/helmchart/static; copied by make chart. */}}

{{/* Labels Helm adds to every object of the release, besides deploy/'s. */}}
{{- define "podnet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* A component's image: images.registry/<repository>:<tag>, the
component's own tag winning over images.tag. */}}
{{- define "podnet.image" -}}
{{- $v := .root.Values -}}
{{- $c := index $v .component -}}
{{- $tag := $c.image.tag | default $v.images.tag -}}
{{- if $v.images.registry }}{{ $v.images.registry }}/{{ end }}{{ $c.image.repository }}:{{ $tag }}
{{- end }}
