{{/* Chart name, overridable by nameOverride. */}}
{{- define "garra-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: fullnameOverride, else the release name (when it contains the chart name), else release-chart. */}}
{{- define "garra-operator.fullname" -}}
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

{{/* Selector labels of the manager pods. */}}
{{- define "garra-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "garra-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Labels of every object. */}}
{{- define "garra-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "garra-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Name of the manager's ServiceAccount. */}}
{{- define "garra-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "garra-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Tag of the manager image: image.tag, else the chart's appVersion. */}}
{{- define "garra-operator.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/* The manager image. */}}
{{- define "garra-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (include "garra-operator.tag" .) }}
{{- end }}

{{/* --garra-image: garraImage, else the manager image (it carries garra). */}}
{{- define "garra-operator.garraImage" -}}
{{- default (include "garra-operator.image" .) .Values.garraImage }}
{{- end }}

{{/* --sandbox-image: sandboxImage, else <image.repository>-sandbox:<tag>. */}}
{{- define "garra-operator.sandboxImage" -}}
{{- default (printf "%s-sandbox:%s" .Values.image.repository (include "garra-operator.tag" .)) .Values.sandboxImage }}
{{- end }}

{{/* Namespace of the leader-election Lease. */}}
{{- define "garra-operator.leaseNamespace" -}}
{{- default .Release.Namespace .Values.leaderElection.namespace }}
{{- end }}

{{/*
The manager's rules: those of config/rbac/role.yaml, which controller-gen
generates from the +kubebuilder:rbac markers of controllers/ (test/chart
checks they are equal). With cluster false, the rules a Role can hold: no
cluster-scoped kinds (ClusterRoles, ClusterRoleBindings, TokenReviews).
*/}}
{{- define "garra-operator.managerRules" -}}
- apiGroups:
  - ""
  resources:
  - configmaps
  verbs:
  - create
  - get
  - list
  - patch
  - watch
{{- if .cluster }}
- apiGroups:
  - ""
  resources:
  - namespaces
  verbs:
  - get
  - list
  - watch
{{- end }}
- apiGroups:
  - ""
  resources:
  - persistentvolumeclaims
  - secrets
  - serviceaccounts
  - services
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - apps
  resources:
  - deployments
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
{{- if .cluster }}
- apiGroups:
  - authentication.k8s.io
  resources:
  - tokenreviews
  verbs:
  - create
{{- end }}
- apiGroups:
  - events.k8s.io
  resources:
  - events
  verbs:
  - create
  - patch
- apiGroups:
  - garra.garraia.io
  resources:
  - garraservers
  - orchestrators
  verbs:
  - get
  - list
  - patch
  - watch
- apiGroups:
  - garra.garraia.io
  resources:
  - garraservers/finalizers
  verbs:
  - update
- apiGroups:
  - garra.garraia.io
  resources:
  - garraservers/status
  - orchestrators/status
  verbs:
  - get
  - patch
- apiGroups:
  - monitoring.coreos.com
  resources:
  - servicemonitors
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - networking.k8s.io
  resources:
  - networkpolicies
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - policy
  resources:
  - poddisruptionbudgets
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - rbac.authorization.k8s.io
  resources:
  {{- if .cluster }}
  - clusterrolebindings
  {{- end }}
  - rolebindings
  - roles
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
{{- if .cluster }}
- apiGroups:
  - rbac.authorization.k8s.io
  resources:
  - clusterroles
  verbs:
  - create
  - get
  - list
  - patch
  - watch
{{- end }}
{{- end }}

{{/* Namespaces the manager watches (--watch-namespace), as a list: watchNamespaces, else with rbac.scope namespace the release namespace, else none (all). */}}
{{- define "garra-operator.watchNamespaces" -}}
{{- if .Values.watchNamespaces }}
{{- toJson .Values.watchNamespaces }}
{{- else if eq .Values.rbac.scope "namespace" }}
{{- toJson (list .Release.Namespace) }}
{{- else }}
{{- toJson list }}
{{- end }}
{{- end }}

{{/* Name of the leader-election Lease: leaderElection.id, else with rbac.scope namespace one of this release's own (two releases may share a namespace), else the manager's default. */}}
{{- define "garra-operator.leaseID" -}}
{{- if .Values.leaderElection.id }}
{{- .Values.leaderElection.id }}
{{- else if eq .Values.rbac.scope "namespace" }}
{{- printf "%s.garra.garraia.io" (include "garra-operator.fullname" .) }}
{{- end }}
{{- end }}
