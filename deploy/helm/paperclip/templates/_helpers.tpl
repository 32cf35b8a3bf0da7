{{- define "paperclip.name" -}}{{ .Release.Name }}{{- end }}
{{- define "paperclip.labels" -}}
app.kubernetes.io/name: paperclip
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
{{- define "paperclip.selector" -}}
app.kubernetes.io/name: paperclip
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
{{- define "paperclip.claim" -}}{{ default (printf "%s-data" .Release.Name) .Values.persistence.existingClaim }}{{- end }}
