/** Supported Kubernetes versions, resolving MAJOR.MINOR to the pinned patch, and their components. */
import { createHash } from 'node:crypto'
import { CliError, ExitCode } from '../errors/index.js'
import { nodePaths } from '../paths.js'
import { compareVersions, kubernetesMinor, parseKubernetesVersion } from './kubernetes-version.js'
import { DEFAULT_KUBERNETES_VERSION, RELEASES, type ReleasePins } from './table.js'

/** The default as `v1.31`, which resolves to the pinned patch (the table's keys always parse). */
export const DEFAULT_KUBERNETES_MINOR =
  kubernetesMinor(DEFAULT_KUBERNETES_VERSION) ?? DEFAULT_KUBERNETES_VERSION

/** One file to install on a node; the shape of components.proto's Component. */
export interface KubernetesComponent {
  url: string
  /** `sha256:<hex>`; the node refuses a component without one. */
  hash: string
  installPath: string
  extract: boolean
}

/** Install paths travel as the node sees them, from `/`; the installer puts them under the node's root. */
const INSTALL_PATHS = nodePaths('/')

export function supportedVersions(): string[] {
  return Object.keys(RELEASES).sort(compareVersions)
}

/** `v1.31` or `1.31` → the supported patch; a full supported version is returned unchanged. */
export function resolveKubernetesVersion(input: string): string {
  const version = parseKubernetesVersion(input.trim())
  if (!version || version.suffix !== '')
    throw unsupported(input, 'is not a version of the form v1.31 or v1.31.13')
  const minor = `v${version.major}.${version.minor}`
  const match = supportedVersions().find((v) => v.startsWith(minor + '.'))
  if (!match) throw unsupported(input, 'is not supported')
  if (version.patch !== undefined && `${minor}.${version.patch}` !== match) {
    throw unsupported(input, `is not supported (the supported patch of ${minor} is ${match})`)
  }
  return match
}

export function isSupportedVersion(version: string): boolean {
  return supportedVersions().includes(version)
}

/** The components of a supported version, in install order. */
export function componentsFor(version: string): KubernetesComponent[] {
  const pins = RELEASES[version]
  if (!pins) throw unsupported(version, 'is not supported')
  return buildComponents(version, pins)
}

function buildComponents(version: string, pins: ReleasePins): KubernetesComponent[] {
  const binary = (name: 'kubelet' | 'kubeadm' | 'kubectl'): KubernetesComponent => ({
    url: `https://dl.k8s.io/${version}/bin/linux/amd64/${name}`,
    hash: `sha256:${pins[name]}`,
    installPath: INSTALL_PATHS[name],
    extract: false,
  })
  const imagePatch = (component: string, image: string): KubernetesComponent => {
    const patch = Buffer.from(
      JSON.stringify([{ op: 'replace', path: '/spec/containers/0/image', value: image }]),
    )
    return {
      url: `data:application/json;base64,${patch.toString('base64')}`,
      hash: `sha256:${createHash('sha256').update(patch).digest('hex')}`, // the node requires one for every component
      installPath: `${INSTALL_PATHS.kubeadmPatchDir}/${component}+json.json`,
      extract: false,
    }
  }
  const k8sImage = (name: string, digest: string) => `registry.k8s.io/${name}:${version}@${digest}`
  return [
    {
      url: pins.cniPlugins.url,
      hash: `sha256:${pins.cniPlugins.sha256}`,
      installPath: INSTALL_PATHS.cniBinDir,
      extract: true,
    },
    {
      url: pins.crictl.url,
      hash: `sha256:${pins.crictl.sha256}`,
      installPath: INSTALL_PATHS.binDir,
      extract: true,
    },
    binary('kubelet'),
    binary('kubeadm'),
    binary('kubectl'),
    imagePatch('kube-apiserver', k8sImage('kube-apiserver', pins.images.apiserver)),
    imagePatch('kube-controller-manager', k8sImage('kube-controller-manager', pins.images.controllerManager)),
    imagePatch('kube-scheduler', k8sImage('kube-scheduler', pins.images.scheduler)),
    imagePatch('etcd', pins.images.etcd),
  ]
}

function unsupported(input: string, why: string): CliError {
  return new CliError(
    `Kubernetes version ${JSON.stringify(input)} ${why}; supported versions are ${supportedVersions().join(', ')}`,
    { exitCode: ExitCode.Usage },
  )
}

/**
 * Where a cluster at `current` can go next: the supported patch of its own minor when it is newer,
 * else the supported patch one minor up (kubeadm moves one minor at a time); undefined at the newest.
 */
export function nextKubernetesVersion(current: string): string | undefined {
  const now = parseKubernetesVersion(current)
  if (!now) return undefined
  const later = supportedVersions().filter((v) => compareVersions(v, current) > 0)
  const sameMinor = later.find((v) => parseKubernetesVersion(v)?.minor === now.minor)
  return sameMinor ?? later.find((v) => parseKubernetesVersion(v)?.minor === now.minor + 1)
}
