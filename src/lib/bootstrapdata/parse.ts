/**
 * Reads the multi-document input (Cluster, Machines, KubeadmConfig(Template)s, Secrets) and checks
 * all of it at once; every problem names the object, the key path and the line. Cluster API objects
 * may be v1alpha3, v1alpha4, v1beta1 or v1beta2: convert.ts turns them into the internal (v1beta1)
 * shape before the schemas check them. Infrastructure objects (DockerMachine, …) are ignored.
 */
import {
  validateCluster,
  validateHasMetadata,
  validateKubeadmConfigSpec,
  validateMachine,
  validateSecret,
} from '../../gen/schemas.js'
import {
  parseYamlDocuments,
  YamlProblemsError,
  type Located,
  type Problem,
  type YamlSource,
} from '../yaml/index.js'
import { checkSchema } from '../yaml/index.js'
import { classifyObject, convertObject, type ObjectKind } from './convert.js'
import { kubernetesVersionProblem } from './defaults.js'
import { controlCharacterProblems, kubernetesNameProblems } from './strings.js'
import {
  CONTROL_PLANE_LABEL,
  type BootstrapObjects,
  type Cluster,
  type KubeadmConfigSpec,
  type Machine,
  type Origin,
} from './types.js'
import { record, validateSpec, type SpecFormat } from './validate.js'

export const isControlPlane = (m: Machine): boolean => m.metadata.labels?.[CONTROL_PLANE_LABEL] !== undefined

export interface ParseOptions {
  /** Overrides every spec's own `format` (the --format flag); Ignition rules follow it. */
  format?: SpecFormat
  /** Attested output: Secret-sourced values are refused. */
  attested?: boolean
}

export function parseBootstrapObjects(text: string, file: string, opts: ParseOptions = {}): BootstrapObjects {
  const objects: BootstrapObjects = { clusters: [], machines: [], configs: new Map(), secrets: new Map() }
  const located: Located[] = []
  const report = (source: YamlSource, origin: Origin | undefined, problems: Problem[]) => {
    const where = origin ? ` (${origin.kind} "${origin.name}")` : ` (document ${source.index + 1})`
    for (const p of problems) located.push({ ...p, message: p.message + where, ...source.locate(p.path) })
  }
  const sources = parseYamlDocuments(text, file)
  const specSources: Array<{
    source: YamlSource
    origin: Origin
    spec: KubeadmConfigSpec
    prefix: string[]
  }> = []
  const machineSources: YamlSource[] = []
  for (const source of sources) {
    const input = record(source.value)
    const classified = classifyObject(input)
    if ('ignored' in classified) continue
    const name = String(record(input?.metadata)?.name ?? '')
    if ('problems' in classified) {
      const kind = classified.kind
      report(source, kind && { file, kind, name }, classified.problems)
      continue
    }
    const { kind } = classified
    const origin: Origin = { file, line: source.locate([])?.line, kind, name }
    const converted = convertObject(kind, classified.version, classified.doc)
    const doc = converted.doc
    // A conversion problem and the schema's view of the same key say one thing: keep the first.
    const said = new Set(converted.problems.map((p) => JSON.stringify(p.path)))
    const problems = [
      ...converted.problems,
      ...checkObject(kind, doc).filter((p) => !said.has(JSON.stringify(p.path))),
    ]
    report(source, origin, problems)
    if (problems.length > 0) continue
    if (kind === 'Cluster') objects.clusters.push({ ...(doc as unknown as Cluster), origin })
    else if (kind === 'Machine') {
      objects.machines.push({ ...(doc as unknown as Machine), origin })
      machineSources.push(source)
    } else if (kind === 'Secret') objects.secrets.set(name, secretData(doc))
    else {
      const prefix = kind === 'KubeadmConfig' ? ['spec'] : ['spec', 'template', 'spec']
      const spec = (prefix.reduce<unknown>((v, k) => record(v)?.[k], doc) ?? {}) as KubeadmConfigSpec
      objects.configs.set(`${kind}/${name}`, { spec, origin })
      specSources.push({ source, origin, spec, prefix })
    }
  }
  for (const { source, origin, spec, prefix } of specSources) {
    report(
      source,
      origin,
      validateSpec(
        spec,
        opts.format ?? spec.format ?? 'cloud-config',
        prefix,
        objects.secrets,
        opts.attested,
      ),
    )
  }
  objects.machines.forEach((machine, i) => {
    report(machineSources[i] as YamlSource, machine.origin, checkMachine(machine, objects))
  })
  if (located.length === 0 && objects.clusters.length === 0) {
    located.push({ path: [], message: 'the input has no Cluster object' })
  }
  if (located.length > 0) throw new YamlProblemsError(file, located)
  return objects
}

function checkObject(kind: ObjectKind, doc: Record<string, unknown>): Problem[] {
  return [...kubernetesNameProblems(kind, record(doc.metadata)?.name), ...checkKind(kind, doc)]
}

function checkKind(kind: ObjectKind, doc: Record<string, unknown>): Problem[] {
  // Cluster and Machine values reach node config, kubeconfig and unit text; Secret values are data.
  const controls =
    kind === 'Cluster' || kind === 'Machine'
      ? [
          ...controlCharacterProblems(doc.spec, ['spec']),
          ...controlCharacterProblems(record(doc.status)?.addresses, ['status', 'addresses']),
        ]
      : []
  switch (kind) {
    case 'Cluster':
      return [...checkSchema(validateCluster, doc), ...controls]
    case 'Machine':
      return [...checkSchema(validateMachine, doc), ...controls]
    case 'Secret':
      return [...checkSchema(validateSecret, doc), ...checkSecretData(doc)]
    case 'KubeadmConfig':
      return [
        ...checkSchema(validateHasMetadata, doc),
        ...checkSchema(validateKubeadmConfigSpec, doc.spec ?? {}, ['spec']),
      ]
    default: {
      const spec = record(record(record(doc.spec)?.template)?.spec) ?? {}
      return [
        ...checkSchema(validateHasMetadata, doc),
        ...checkSchema(validateKubeadmConfigSpec, spec, ['spec', 'template', 'spec']),
      ]
    }
  }
}

function checkMachine(machine: Machine, objects: BootstrapObjects): Problem[] {
  const problems: Problem[] = []
  if (!objects.clusters.some((c) => c.metadata.name === machine.spec.clusterName)) {
    problems.push({
      path: ['spec', 'clusterName'],
      message: `Cluster "${machine.spec.clusterName}" is not in the input`,
    })
  }
  const ref = machine.spec.bootstrap?.configRef
  const config = ref ? objects.configs.get(`${ref.kind ?? 'KubeadmConfig'}/${ref.name}`) : undefined
  if (!ref)
    problems.push({
      path: ['spec', 'bootstrap', 'configRef'],
      message: 'required: the KubeadmConfig to render',
    })
  else if (!config) {
    problems.push({
      path: ['spec', 'bootstrap', 'configRef', 'name'],
      message: `${ref.kind ?? 'KubeadmConfig'} "${ref.name}" is not in the input`,
    })
  }
  if (machine.spec.version === undefined) {
    problems.push({
      path: ['spec', 'version'],
      message: 'required: the Kubernetes version selects the kubeadm API version',
    })
  } else {
    const err = kubernetesVersionProblem(machine.spec.version)
    if (err) problems.push({ path: ['spec', 'version'], message: err })
  }
  if (
    config &&
    !isControlPlane(machine) &&
    record(config.spec.joinConfiguration)?.controlPlane !== undefined
  ) {
    problems.push({
      path: ['spec', 'bootstrap', 'configRef'],
      message: `worker machine uses ${config.origin.kind} "${config.origin.name}" whose joinConfiguration.controlPlane is set; label the machine ${CONTROL_PLANE_LABEL} or remove controlPlane`,
    })
  }
  return problems
}

function checkSecretData(doc: Record<string, unknown>): Problem[] {
  const data = record(doc.data) ?? {}
  return Object.entries(data)
    .filter(([, v]) => typeof v === 'string' && !/^[A-Za-z0-9+/]*={0,2}$/.test(v.replace(/\s/g, '')))
    .map(([k]) => ({ path: ['data', k], message: 'is not base64 (use stringData for plain text)' }))
}

function secretData(doc: Record<string, unknown>): Map<string, string> {
  const out = new Map<string, string>()
  for (const [k, v] of Object.entries(record(doc.data) ?? {}))
    out.set(k, Buffer.from(String(v), 'base64').toString('utf8'))
  for (const [k, v] of Object.entries(record(doc.stringData) ?? {})) out.set(k, String(v))
  return out
}
