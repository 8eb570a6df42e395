"""The autoscaling controllers on ARC's AutoscalingRunnerSet and AutoscalingListener.

The contract between them, the AutoscalingListener the ARS controller writes and the
listener controller reads:

# AutoscalingListener objects written by the AutoscalingRunnerSet controller

Contract between the ARS controller (branch issue-13-ars) and the AL controller
(branch issue-13-al). ARC 0.14's AL spec fields, plus what is noted as ours.
Python: `ersctl.autoscaling.runnerset_desired.new_listener(...)` builds the body (ARS side).

## Identity

- `apiVersion: actions.github.com/v1alpha1`, `kind: AutoscalingListener`.
- `metadata.name`: `<ARS name>-<first 8 of fnv_hash(ARS namespace)>-listener`
  (ARC's `scaleSetListenerName`; `ersctl.naming.listener_name(namespace, name)`,
  using the existing `ersctl.naming.fnv_hash`).
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
- `actions.github.com/runner-spec-hash`: a hash of the whole ARS `spec` (ARC's
  `ListenerSpecHash`; ours is `fnv_hash` of canonical JSON, not ARC's spew hash).
  It changes with the runner template too: **roll the listener Pod when it changes**
  (the ERS controller resets its cleanup marker on a revision advance on the
  assumption that a template change restarts the listener, DESIGN.md step 4).
- `actions.github.com/values-hash`: copied from the ARS's annotation (Helm's), or "".

## spec (ARC 0.14's AutoscalingListenerSpec field names)

| field | value |
|---|---|
| `githubConfigUrl` | ARS `spec.githubConfigUrl` |
| `githubConfigSecret` | ARS `spec.githubConfigSecret` (a Secret in the **ARS's** namespace) |
| `runnerScaleSetId` | int, from the ARS annotation `runner-scale-set-id` |
| `autoscalingRunnerSetNamespace` | ARS namespace |
| `autoscalingRunnerSetName` | ARS name |
| `ephemeralRunnerSetName` | the actual name of the ERS the ARS owns (ARC 0.14: `generateName: <ARS>-`, so it is not derivable: read it here) |
| `minRunners` | ARS `spec.minRunners`, 0 when unset |
| `maxRunners` | ARS `spec.maxRunners`, 2147483647 when unset (ARC's MaxInt32) |
| `image` | **never written** (the AL controller's own `--listener-image` applies to an AL that names none; an adopted ARC AL's image is removed by the in-place patch) |
| `imagePullSecrets` | never written |
| `proxy` | ARS `spec.proxy` when set (ProxyConfig: http/https {url, credentialSecretRef}, noProxy) |
| `githubServerTLS` | ARS `spec.githubServerTLS` when set (certificateFrom.configMapKeyRef {name, key}) |
| `template` | ARS `spec.listenerTemplate` when set (PodTemplateSpec) |
| `metrics` | ARS `spec.listenerMetrics` when set (ARC's AL field name `metrics`: counters/gauges/histograms) |

Fields absent on the ARS are absent on the AL (not null).

## Who writes what

- The ARS controller creates the AL once the scale set is registered (annotation
  `runner-scale-set-id` set) and the ERS exists; it **patches the AL in place** (JSON
  merge patch of `spec`, the labels above and the two annotations) when they drift from
  the desired ones (min/max change, template change, credentials Secret renamed...). It
  never writes AL `status`. The AL controller rolls the listener Pod on any such change.
- Teardown (ARS deleted, or the ARS controller needs the listener stopped): the ARS
  controller **deletes the AL and waits until a GET returns 404** before it drains the
  ERS. The AL controller should hold its own finalizer
  (`autoscalinglistener.actions.github.com/finalizer`, ARC's) while it deletes the
  listener Pod and its Secret/SA/Role/RoleBinding, then drop it.
- Events: the ARS controller is enqueued by AL events mapped through
  `spec.autoscalingRunnerSetNamespace/Name` (so a deleted AL is re-created).
"""
