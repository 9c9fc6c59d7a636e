/**
 * KubeadmConfigSpec (of a KubeadmConfig or KubeadmConfigTemplate) in the internal v1beta1 shape, as
 * CAPI's conversions produce it (`api/bootstrap/kubeadm/v1beta1/conversion.go`, capi.md §1.6). Works
 * on a copy the caller owns; problems carry key paths from the object's root (`at`).
 *
 * v1alpha3 (its kubeadm types are kubeadm's v1beta1): `clusterConfiguration.useHyperKubeImage` and
 * `dns.type` are dropped, as CAPI's v1alpha3 → v1alpha4 conversion drops them. v1alpha4 is v1beta1 in
 * every field read here.
 *
 * v1beta2:
 * - extraArgs (apiServer, controllerManager, scheduler, etcd.local) and nodeRegistration
 *   kubeletExtraArgs are lists of {name, value}: they become maps. A name given twice is a problem
 *   (v1beta2's CEL rule forbids it so that the v1beta1 map can hold it; issue #13853).
 * - bootstrapTokens[].ttlSeconds → ttl (a Go duration, "24h0m0s").
 * - timeouts (integer seconds): init's controlPlaneComponentHealthCheckSeconds →
 *   clusterConfiguration.apiServer.timeoutForControlPlane, join's tlsBootstrapSeconds →
 *   joinConfiguration.discovery.timeout: the v1beta1 places CAPI's ConvertFrom moves them to. The
 *   others (kubeletHealthCheck, kubernetesAPICall, etcdAPICall, discovery, and join's
 *   controlPlaneComponentHealthCheck) have no v1beta1 field: they are dropped without an error, as in
 *   CAPI's own v1beta1 view (which keeps them only in its conversion-data annotation), and kubeadm
 *   applies its defaults for them.
 * - files[].append (*bool), files[].contentFrom (a value), users' and partitions' *bool fields and
 *   ignition.containerLinuxConfig.strict (*bool) have the same JSON as in v1beta1: nothing to do.
 *   files[].contentFormat Raw is the v1beta1 behaviour; Template is refused (no v1beta1 equivalent).
 * - partitions: layout is optional (false when unset, as CAPI converts it); diskLayout is refused.
 * - v1beta2 has no clusterConfiguration kubernetesVersion, clusterName or networking (they come from
 *   the Cluster and Machine, which this tool injects for every version), no timeoutForControlPlane,
 *   discovery.timeout, bootstrap token ttl or useExperimentalRetryJoin: given, each is a problem
 *   naming its v1beta2 replacement, as `kubectl apply` (strict field validation) would refuse them.
 * - certificateValidityPeriodDays, caCertificateValidityPeriodDays and encryptionAlgorithm have no
 *   v1beta1 field: their defaults are accepted (and dropped), any other value is refused.
 */
import type { KeyPath, Problem } from '../yaml/index.js'
import type { CapiVersion } from './types.js'
import { record } from './validate.js'

type Report = (path: KeyPath, message: string) => void
type Obj = Record<string, unknown>

const CONTROL_PLANE_ARGS: KeyPath[] = [['apiServer'], ['controllerManager'], ['scheduler'], ['etcd', 'local']]

const TIMEOUTS = [
  'controlPlaneComponentHealthCheckSeconds',
  'kubeletHealthCheckSeconds',
  'kubernetesAPICallSeconds',
  'etcdAPICallSeconds',
  'tlsBootstrapSeconds',
  'discoverySeconds',
]

/** v1beta2-only ClusterConfiguration fields: accepted at the value the tool uses anyway. */
const DEFAULT_ONLY: Array<[key: string, value: unknown]> = [
  ['encryptionAlgorithm', 'RSA-2048'],
  ['caCertificateValidityPeriodDays', 3650],
  ['certificateValidityPeriodDays', 365],
]

export function convertSpec(version: CapiVersion, spec: unknown, at: KeyPath, problems: Problem[]): unknown {
  const s = record(spec)
  if (!s) return spec // the schema says what is wrong
  if (version === 'v1alpha3') fromV1alpha3(s)
  if (version === 'v1beta2') {
    const report: Report = (path, message) => problems.push({ path: [...at, ...path], message })
    fromV1beta2(s, report)
  }
  return s
}

function fromV1alpha3(s: Obj): void {
  const cc = record(s.clusterConfiguration)
  if (!cc) return
  delete cc.useHyperKubeImage
  const dns = record(cc.dns)
  if (dns) delete dns.type
  if (dns && Object.keys(dns).length === 0) delete cc.dns
}

function fromV1beta2(s: Obj, report: Report): void {
  if (s.useExperimentalRetryJoin !== undefined)
    report(['useExperimentalRetryJoin'], 'not a v1beta2 field: removed in v1beta2')
  clusterConfiguration(s, report)
  initConfiguration(s, report)
  joinConfiguration(s, report)
  const files = s.files
  if (Array.isArray(files)) files.forEach((f, i) => fileContentFormat(record(f), ['files', i], report))
  const partitions = record(s.diskSetup)?.partitions
  if (Array.isArray(partitions)) partitions.forEach((p, i) => partitionLayout(record(p), i, report))
}

function clusterConfiguration(s: Obj, report: Report): void {
  const cc = record(s.clusterConfiguration)
  if (!cc) return
  const at = ['clusterConfiguration']
  for (const key of ['kubernetesVersion', 'clusterName', 'networking'])
    if (cc[key] !== undefined)
      report([...at, key], 'not a v1beta2 field: v1beta2 takes it from the Cluster and the Machine')
  if (record(cc.apiServer)?.timeoutForControlPlane !== undefined)
    report(
      [...at, 'apiServer', 'timeoutForControlPlane'],
      'not a v1beta2 field: use initConfiguration.timeouts.controlPlaneComponentHealthCheckSeconds',
    )
  for (const component of CONTROL_PLANE_ARGS) convertArgs(cc, at, component, 'extraArgs', report)
  for (const [key, value] of DEFAULT_ONLY) {
    if (cc[key] === undefined) continue
    if (cc[key] === value) delete cc[key]
    else
      report(
        [...at, key],
        `${JSON.stringify(cc[key])} is not supported: the v1beta1 shape this tool renders from has no ${key}; remove it or set ${JSON.stringify(value)}`,
      )
  }
}

function initConfiguration(s: Obj, report: Report): void {
  const init = record(s.initConfiguration)
  if (!init) return
  const at = ['initConfiguration']
  convertArgs(init, at, ['nodeRegistration'], 'kubeletExtraArgs', report)
  const tokens = init.bootstrapTokens
  if (Array.isArray(tokens))
    tokens.forEach((t, i) => tokenTtl(record(t), [...at, 'bootstrapTokens', i], report))
  const health = takeTimeouts(init, at, report).controlPlaneComponentHealthCheckSeconds
  if (health === undefined) return
  s.clusterConfiguration ??= {}
  const cc = record(s.clusterConfiguration)
  if (!cc) return
  cc.apiServer ??= {}
  const apiServer = record(cc.apiServer)
  if (apiServer) apiServer.timeoutForControlPlane = goDuration(health)
}

function joinConfiguration(s: Obj, report: Report): void {
  const join = record(s.joinConfiguration)
  if (!join) return
  const at = ['joinConfiguration']
  convertArgs(join, at, ['nodeRegistration'], 'kubeletExtraArgs', report)
  if (record(join.discovery)?.timeout !== undefined)
    report(
      [...at, 'discovery', 'timeout'],
      'not a v1beta2 field: use joinConfiguration.timeouts.tlsBootstrapSeconds',
    )
  const tls = takeTimeouts(join, at, report).tlsBootstrapSeconds
  if (tls === undefined) return
  join.discovery ??= {}
  const discovery = record(join.discovery)
  if (discovery) discovery.timeout = goDuration(tls)
}

/** Replaces `parent[...path][key]`, a v1beta2 list of {name, value}, with the v1beta1 map. */
function convertArgs(parent: Obj, at: KeyPath, path: KeyPath, key: string, report: Report): void {
  const owner = path.reduce<Obj | undefined>((o, k) => record(o?.[k]), parent)
  if (owner?.[key] === undefined) return
  const where = [...at, ...path, key]
  const list = owner[key]
  if (!Array.isArray(list)) {
    report(where, 'must be a list of {name, value} in v1beta2')
    return
  }
  const map: Record<string, string> = {}
  const first = new Map<string, number>()
  list.forEach((item, i) => {
    const arg = record(item)
    if (typeof arg?.name !== 'string' || arg.name === '' || typeof arg.value !== 'string') {
      report([...where, i], 'must be {name, value} with a non-empty string name and a string value')
      return
    }
    const seen = first.get(arg.name)
    if (seen !== undefined) {
      report(
        [...where, i, 'name'],
        `duplicate argument "${arg.name}" (also at ${key}[${seen}]): v1beta2 allows each name once, since v1beta1 holds them in a map`,
      )
      return
    }
    first.set(arg.name, i)
    map[arg.name] = arg.value
  })
  owner[key] = map
}

function tokenTtl(token: Obj | undefined, at: KeyPath, report: Report): void {
  if (!token) return
  if (token.ttl !== undefined) report([...at, 'ttl'], 'not a v1beta2 field: use ttlSeconds')
  if (token.ttlSeconds === undefined) return
  if (!isSeconds(token.ttlSeconds)) {
    report([...at, 'ttlSeconds'], 'must be an integer number of seconds, 0 or more')
    return
  }
  token.ttl = goDuration(token.ttlSeconds)
  delete token.ttlSeconds
}

/** Removes `timeouts` from an init or join configuration; the valid ones, by name. */
function takeTimeouts(config: Obj, at: KeyPath, report: Report): Record<string, number> {
  const given = config.timeouts
  delete config.timeouts
  if (given === undefined) return {}
  const timeouts = record(given)
  if (!timeouts) {
    report([...at, 'timeouts'], 'must be an object')
    return {}
  }
  const out: Record<string, number> = {}
  for (const [name, value] of Object.entries(timeouts)) {
    if (!TIMEOUTS.includes(name)) report([...at, 'timeouts', name], 'unknown key')
    else if (!isSeconds(value))
      report([...at, 'timeouts', name], 'must be an integer number of seconds, 0 or more')
    else out[name] = value
  }
  return out
}

function fileContentFormat(file: Obj | undefined, at: KeyPath, report: Report): void {
  const format = file?.contentFormat
  if (!file || format === undefined) return
  if (format === 'Raw') delete file.contentFormat
  else if (format === 'Template')
    report(
      [...at, 'contentFormat'],
      'Template is not supported: v1beta1 has no templated content; render the content before, or use Raw',
    )
  else report([...at, 'contentFormat'], 'must be one of "Raw", "Template"')
}

function partitionLayout(partition: Obj | undefined, i: number, report: Report): void {
  if (!partition) return
  if (partition.diskLayout !== undefined)
    report(
      ['diskSetup', 'partitions', i, 'diskLayout'],
      'not supported: v1beta1 has no diskLayout; use layout: true (one partition over the disk)',
    )
  else partition.layout ??= false
}

const isSeconds = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0

/** Go's time.Duration String() of whole seconds, as metav1.Duration serializes: 90 → "1m30s". */
export function goDuration(seconds: number): string {
  if (seconds === 0) return '0s'
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = seconds % 60
  return `${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${s}s`
}
