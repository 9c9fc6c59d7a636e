/** Kubernetes version text (`v1.31.2`, `1.31.2`, `v1.33.1-rc.0`, `v1.31`): the one parser, order and kubeadm API. */

export interface KubernetesVersion {
  major: number
  minor: number
  /** Undefined for a minor alone (`v1.31`). */
  patch?: number
  /** The pre-release or build part with its `-` or `+` (`-rc.0`); '' for a release. */
  suffix: string
}

const VERSION = /^v?(\d+)\.(\d+)(?:\.(\d+)([-+][0-9A-Za-z.+-]*)?)?$/

/** kubeadm reads v1beta4 from 1.31 on (v1beta3 is deprecated there) and only v1beta3 before. */
export const KUBEADM_V1BETA4_FROM_MINOR = 31

/** MAJOR.MINOR[.PATCH[-pre|+build]], with or without the leading `v`; undefined for anything else. */
export function parseKubernetesVersion(text: string): KubernetesVersion | undefined {
  const m = VERSION.exec(text)
  if (!m) return undefined
  return {
    major: Number(m[1]),
    minor: Number(m[2]),
    patch: m[3] === undefined ? undefined : Number(m[3]),
    suffix: m[4] ?? '',
  }
}

/** Named down to the patch, with no pre-release or build part. */
export function isPatchRelease(version: KubernetesVersion | undefined): boolean {
  return version?.patch !== undefined && version.suffix === ''
}

/** `v1.31` for `v1.31.2`, `1.31` or `v1.31.0-rc.1`; undefined when the text is not a version. */
export function kubernetesMinor(text: string): string | undefined {
  const version = parseKubernetesVersion(text)
  return version && `v${version.major}.${version.minor}`
}

/** Version order; a pre-release sorts before its release, text that is no version as v0.0.0. */
export function compareVersions(a: string, b: string): number {
  const pa = parseKubernetesVersion(a)
  const pb = parseKubernetesVersion(b)
  return (
    (pa?.major ?? 0) - (pb?.major ?? 0) ||
    (pa?.minor ?? 0) - (pb?.minor ?? 0) ||
    (pa?.patch ?? 0) - (pb?.patch ?? 0) ||
    Number(!isPreRelease(pa)) - Number(!isPreRelease(pb))
  )
}

/** The kubeadm config API a Kubernetes version takes; callers have checked the version already. */
export function kubeadmApiVersion(kubernetesVersion: string): string {
  const version = parseKubernetesVersion(kubernetesVersion)
  if (!version)
    throw new Error(`${JSON.stringify(kubernetesVersion)} is not a Kubernetes version like v1.31.2`)
  return version.major > 1 || (version.major === 1 && version.minor >= KUBEADM_V1BETA4_FROM_MINOR)
    ? 'kubeadm.k8s.io/v1beta4'
    : 'kubeadm.k8s.io/v1beta3'
}

const isPreRelease = (version: KubernetesVersion | undefined) => version?.suffix.startsWith('-') === true
