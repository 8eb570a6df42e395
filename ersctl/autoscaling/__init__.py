"""The autoscaling controllers on ARC's AutoscalingRunnerSet and AutoscalingListener.

The contract between them, the AutoscalingListener the ARS controller writes and the
listener controller reads:

# AutoscalingListener objects written by the AutoscalingRunnerSet controller

Contract between the ARS controller and the AL controller: ARC's AL spec fields (0.14
and 0.15), plus what is noted as ours. Python:
`ersctl.autoscaling.listener_desired.new_listener(...)` builds the body (ARS side).

## Identity

- `apiVersion: actions.github.com/v1alpha1`, `kind: AutoscalingListener`.
- `metadata.name`: `<ARS name>-<first 8 of fnv_hash("<ns>@<spec.runnerGroup>@<spec.githubConfigUrl>")>-listener`
  (ARC >= 0.13.1's `scaleSetListenerName`; `ersctl.naming.listener_name`). Any other
  AL naming the same ARS in its spec is deleted before this one is made (one session
  per scale set: `ersctl.autoscaling.listener_desired.strays`).
- `metadata.namespace`: the listener namespace: `ersctl reconcile --listener-namespace`
  (ARC: the controller's namespace); when not given, the ARS's own namespace.
- `metadata.ownerReferences`: a controller reference to the ARS (apiVersion
  actions.github.com/v1alpha1, kind AutoscalingRunnerSet, name, uid, controller: true,
  blockOwnerDeletion: true) **only when the AL is in the ARS's namespace**
  (a cross-namespace ownerReference is invalid: the garbage collector would delete the
  AL). Map an AL to its ARS by `spec.autoscalingRunnerSetNamespace/Name`, not by owner.

## Labels (ARC's)

The ARS's `spec.autoscalingListener.labels`, then all labels of the ARS, then, overriding:
- `actions.github.com/scale-set-namespace: <ARS namespace>`
- `actions.github.com/scale-set-name: <ARS name>`
- `app.kubernetes.io/part-of: gha-runner-scale-set`
- `app.kubernetes.io/component: runner-scale-set-listener`
- `app.kubernetes.io/version: <the ARS's app.kubernetes.io/version label, or "">`
- from `spec.githubConfigUrl`: `actions.github.com/organization`,
  `actions.github.com/enterprise`, `actions.github.com/repository` (each only when
  the URL has it; values over 63 characters cut to 58 + `-trim`, as ARC).

## Annotations

The ARS's `spec.autoscalingListener.annotations`, then:
- `actions.github.com/integrity-hash` (ARC 0.15's key) and
  `actions.github.com/runner-spec-hash` (0.14's): our hash of the AL's spec, which
  never equals ARC's (so ARC, switched back, rebuilds the AL with its own image). The
  runner template is not in it: a template change does not restart the listener.
- `actions.github.com/values-hash`: copied from the ARS's annotation (Helm's), or "".

## spec (ARC 0.14's AutoscalingListenerSpec field names)

| field | value |
|---|---|
| `githubConfigUrl` | ARS `spec.githubConfigUrl` |
| `githubConfigSecret` | ARS `spec.githubConfigSecret` (a Secret in the **ARS's** namespace) |
| `runnerScaleSetId` | int, from the ARS annotation `runner-scale-set-id` |
| `autoscalingRunnerSetNamespace` | ARS namespace |
| `autoscalingRunnerSetName` | ARS name |
| `ephemeralRunnerSetName` | the actual name of the ERS the ARS owns (the ARS's own name for one we make, as ARC 0.15; ARC 0.14 generated it: read it here) |
| `minRunners` | ARS `spec.minRunners`, 0 when unset |
| `maxRunners` | ARS `spec.maxRunners`, 2147483647 when unset (ARC's MaxInt32) |
| `image` | **never written** (the AL controller's own `--listener-image` applies to an AL that names none; an adopted ARC AL's image is removed by the in-place patch) |
| `imagePullSecrets` | never written |
| `proxy` | ARS `spec.proxy` when set (ProxyConfig: http/https {url, credentialSecretRef}, noProxy) |
| `githubServerTLS` | ARS `spec.githubServerTLS` when set (certificateFrom.configMapKeyRef {name, key}) |
| `template` | ARS `spec.listenerTemplate` when set (PodTemplateSpec) |
| `metrics` | ARS `spec.listenerMetrics` when set (ARC's AL field name `metrics`: counters/gauges/histograms) |
| `vaultConfig` | ARS `spec.vaultConfig` when set |
| `serviceAccountMetadata`, `roleMetadata`, `roleBindingMetadata`, `configSecretMetadata` | ARS `spec.listenerServiceAccountMetadata`... when set (their labels and annotations reach those objects) |

Fields absent on the ARS are absent on the AL (not null).

## Who writes what

- The ARS controller creates the AL once the scale set is registered (annotation
  `runner-scale-set-id` set) and the ERS exists; it **patches the AL in place** (JSON
  merge patch of `spec`, the labels above and the annotations) when they drift from
  the desired ones (min/max change, listener template change, credentials Secret
  renamed...). It never writes AL `status`. The AL controller rolls the listener Pod
  when what the Pod runs from changed (config, proxy, Pod spec, ServiceAccount
  annotations) and patches its labels and annotations in place otherwise.
- Teardown (ARS deleted, or the ARS controller needs the listener stopped): the ARS
  controller **deletes every AL of the ARS, wherever it is, and waits until a GET of
  each returns 404** before it drains the ERS. The AL controller should hold its own finalizer
  (`autoscalinglistener.actions.github.com/finalizer`, ARC's) while it deletes the
  listener Pod and its Secret/SA/Role/RoleBinding, then drop it.
- Events: the ARS controller is enqueued by AL events mapped through
  `spec.autoscalingRunnerSetNamespace/Name` (so a deleted AL is re-created).
"""
