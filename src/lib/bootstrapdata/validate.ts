/**
 * The KubeadmConfigSpec rules of the CAPI validating webhook (capi.md §1.3), plus the ones this
 * port adds because it has no controller to catch them later. Pure: spec in, problems out.
 */
import type { KeyPath, Problem } from '../yaml/index.js'
import {
  controlCharacterProblems,
  fileModeProblem,
  fileOwnerProblem,
  isBase64,
  isGzipBase64,
  userNameProblem,
} from './strings.js'
import type { KubeadmConfigSpec, SecretRef } from './types.js'

export type SpecFormat = 'cloud-config' | 'ignition'

/** Problems of one spec for the format it will be rendered in; paths are relative to `prefix`. */
export function validateSpec(
  spec: KubeadmConfigSpec,
  format: SpecFormat,
  prefix: ReadonlyArray<string | number>,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
  attested = false,
): Problem[] {
  const problems: Problem[] = []
  const add = (path: Array<string | number>, message: string) =>
    problems.push({ path: [...prefix, ...path], message })
  for (const p of controlCharacterProblems(spec, [], isMultiLine)) add([...p.path], p.message)
  checkFiles(spec, add, secrets)
  checkFileAttributes(spec, format, add)
  checkEncodings(spec, add, secrets)
  checkUsers(spec, add, secrets)
  checkDiscovery(spec, add)
  if (record(record(spec.clusterConfiguration)?.etcd)?.external !== undefined) {
    add(
      ['clusterConfiguration', 'etcd', 'external'],
      'external etcd is not supported: the data would carry the etcd CA key instead of the client certificate files',
    )
  }
  if (spec.useExperimentalRetryJoin) {
    add(['useExperimentalRetryJoin'], 'is not supported (deprecated in CAPI v1beta1, removed in v1beta2)')
  }
  if (spec.ignition?.containerLinuxConfig?.additionalConfig !== undefined) {
    add(
      ['ignition', 'containerLinuxConfig', 'additionalConfig'],
      'is not supported: output is Ignition spec 3 (Container Linux Config is spec 2); use files, users and commands instead',
    )
  }
  if (attested) checkNoSecretSources(spec, add)
  if (format === 'ignition') checkIgnitionCompatible(spec, add)
  else if (spec.ignition !== undefined) add(['ignition'], 'may only be set when the format is ignition')
  return problems
}

type Add = (path: Array<string | number>, message: string) => void

/** Spec values where a newline is data (file contents, shell commands), not a break-out. */
function isMultiLine(path: KeyPath): boolean {
  const [top, , field] = path
  if (top === 'files') return field === 'content'
  return (
    (path.length === 2 &&
      (top === 'bootCommands' || top === 'preKubeadmCommands' || top === 'postKubeadmCommands')) ||
    (top === 'ignition' && path[2] === 'additionalConfig')
  )
}

// Undecodable content would reach the node as garbage (Ignition data URLs carry the decoded bytes).
function checkEncodings(
  spec: KubeadmConfigSpec,
  add: Add,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
) {
  spec.files?.forEach((file, i) => {
    if (file.encoding !== 'base64' && file.encoding !== 'gzip+base64') return
    const why = `(encoding: ${file.encoding})`
    if (file.content !== undefined) {
      if (!isBase64(file.content)) add(['files', i, 'content'], `is not valid base64 ${why}`)
      else if (file.encoding === 'gzip+base64' && !isGzipBase64(file.content))
        add(['files', i, 'content'], `is base64 but not gzip data ${why}`)
    }
    const ref = file.contentFrom?.secret
    const value = ref?.name && ref.key ? secrets.get(ref.name)?.get(ref.key) : undefined
    if (value !== undefined && !isBase64(value))
      add(['files', i, 'contentFrom'], `Secret "${ref?.name}" key "${ref?.key}" is not valid base64 ${why}`)
  })
}

function checkFiles(
  spec: KubeadmConfigSpec,
  add: Add,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
) {
  const seen = new Map<string, number>()
  spec.files?.forEach((file, i) => {
    if (file.content !== undefined && file.contentFrom !== undefined) {
      add(['files', i], 'only one of content or contentFrom may be specified')
    }
    if (file.contentFrom) checkSecretRef(file.contentFrom, ['files', i, 'contentFrom'], add, secrets)
    if (typeof file.path === 'string') {
      if (!file.path.startsWith('/')) add(['files', i, 'path'], 'must be an absolute path')
      const first = seen.get(file.path)
      if (first !== undefined)
        add(['files', i, 'path'], `path must be unique among all files (also files[${first}])`)
      else seen.set(file.path, i)
    }
  })
}

// Ignition and cloud-init take both as they are; checked here, where the input line can be named.
function checkFileAttributes(spec: KubeadmConfigSpec, format: SpecFormat, add: Add) {
  spec.files?.forEach((file, i) => {
    for (const problem of [
      file.permissions !== undefined && fileModeProblem(file.permissions, ['files', i, 'permissions']),
      file.owner !== undefined && fileOwnerProblem(file.owner, ['files', i, 'owner'], format === 'ignition'),
    ]) {
      if (problem) add([...problem.path], problem.message)
    }
  })
}

function checkUsers(
  spec: KubeadmConfigSpec,
  add: Add,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
) {
  spec.users?.forEach((user, i) => {
    const badName = userNameProblem(user.name, ['users', i, 'name'])
    if (badName) add([...badName.path], badName.message)
    if (user.passwd !== undefined && user.passwdFrom !== undefined) {
      add(['users', i], 'only one of passwd or passwdFrom may be specified')
    }
    if (user.passwdFrom) checkSecretRef(user.passwdFrom, ['users', i, 'passwdFrom'], add, secrets)
  })
}

function checkSecretRef(
  ref: SecretRef,
  path: Array<string | number>,
  add: Add,
  secrets: ReadonlyMap<string, ReadonlyMap<string, string>>,
) {
  const { name, key } = ref.secret ?? {}
  if (!name) return add([...path, 'secret', 'name'], 'secret name is required')
  if (!key) return add([...path, 'secret', 'key'], 'secret key is required')
  const secret = secrets.get(name)
  if (!secret)
    return add(
      [...path, 'secret', 'name'],
      `Secret "${name}" is not in the input; add it as a kind: Secret document`,
    )
  if (!secret.has(key)) add([...path, 'secret', 'key'], `Secret "${name}" has no key "${key}"`)
}

// Attested data promises that user data holds no secret; a Secret-sourced value would break that.
function checkNoSecretSources(spec: KubeadmConfigSpec, add: Add) {
  const why =
    'would put a Secret into user data, which attested formats never do; ship it with the image or fetch it after attestation'
  spec.files?.forEach((f, i) => f.contentFrom && add(['files', i, 'contentFrom'], why))
  spec.users?.forEach((u, i) => u.passwdFrom && add(['users', i, 'passwdFrom'], why))
}

function checkDiscovery(spec: KubeadmConfigSpec, add: Add) {
  const discovery = record(spec.joinConfiguration?.discovery)
  const kubeConfig = record(record(discovery?.file)?.kubeConfig)
  if (!kubeConfig) return
  const user = record(kubeConfig.user) ?? {}
  const set = ['authProvider', 'exec'].filter((k) => user[k] !== undefined)
  if (set.length !== 1) {
    add(
      ['joinConfiguration', 'discovery', 'file', 'kubeConfig', 'user'],
      'exactly one of authProvider or exec must be set',
    )
  }
}

function checkIgnitionCompatible(spec: KubeadmConfigSpec, add: Add) {
  const forbidden = (path: Array<string | number>, what: string) =>
    add(path, `${what} is not supported with Ignition`)
  spec.users?.forEach((u, i) => u.inactive && forbidden(['users', i, 'inactive'], 'inactive: true'))
  spec.files?.forEach((f, i) => {
    if (f.encoding === 'gzip' || f.encoding === 'gzip+base64')
      forbidden(['files', i, 'encoding'], `encoding ${f.encoding}`)
  })
  if (spec.bootCommands?.length) forbidden(['bootCommands'], 'bootCommands')
  spec.diskSetup?.partitions?.forEach((p, i) => {
    if (p.tableType !== undefined && p.tableType !== 'gpt')
      add(['diskSetup', 'partitions', i, 'tableType'], 'must be gpt with Ignition')
  })
  // Ignition addresses devices and mount units by absolute path only.
  const absolute = (value: string | undefined, path: Array<string | number>) => {
    if (value !== undefined && !value.startsWith('/')) add(path, 'must be an absolute path with Ignition')
  }
  spec.diskSetup?.partitions?.forEach((p, i) => absolute(p.device, ['diskSetup', 'partitions', i, 'device']))
  spec.diskSetup?.filesystems?.forEach((fs, i) =>
    absolute(fs.device, ['diskSetup', 'filesystems', i, 'device']),
  )
  spec.mounts?.forEach((m, i) => absolute(m[1] ?? '', ['mounts', i, 1]))
  spec.diskSetup?.filesystems?.forEach((fs, i) => {
    if (fs.replaceFS !== undefined) forbidden(['diskSetup', 'filesystems', i, 'replaceFS'], 'replaceFS')
    if (fs.partition !== undefined) forbidden(['diskSetup', 'filesystems', i, 'partition'], 'partition')
  })
}

export function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined
}
