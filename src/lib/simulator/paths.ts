/** Where the package's fakes are (kubeadm, systemctl, the kubelet unit, the stand-in charts), and the kubelet unit rendered for a node root. */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { packageFile } from '../paths.js'

export interface SimulatorPaths {
  /** The kubeadm contract fake (an executable Node script). */
  kubeadmFake: string
  /** The folder holding the systemctl fake: put it first on PATH. */
  systemctlFakeDir: string
  /** The stand-in for the machine image's kubelet.service (render it with kubeletUnitFor). */
  kubeletUnit: string
  /** The API contract fake as a process: `node apiEntry --dir D --kubeconfig F [--listen H:P]`. */
  apiEntry: string
}

/** Where the simulator's files are in the installed package (default: this package's root). */
export function simulatorPaths(packageRoot: string = packageFile()): SimulatorPaths {
  const at = (...p: string[]) => path.resolve(packageRoot, ...p)
  return {
    kubeadmFake: at('simulator', 'kubeadm-fake', 'kubeadm'),
    systemctlFakeDir: at('simulator', 'systemctl-fake'),
    kubeletUnit: at('simulator', 'kubelet-unit', 'kubelet.service'),
    apiEntry: at('dist', 'mini-simulator.js'),
  }
}

/**
 * The kubelet unit `unitFile` as a node's image would install it under `root`: its /usr/bin/kubelet
 * is the kubelet stand-in beside the unit file, and the kubelet's files (/etc/kubernetes,
 * /var/lib/kubelet) are the node's.
 */
export async function kubeletUnitFor(unitFile: string, root: string): Promise<string> {
  return (await readFile(unitFile, 'utf8'))
    .replaceAll('/usr/bin/kubelet', path.join(path.dirname(unitFile), 'kubelet'))
    .replaceAll('/etc/kubernetes/', path.join(root, 'etc/kubernetes') + '/')
    .replaceAll('/var/lib/kubelet', path.join(root, 'var/lib/kubelet'))
}

/** One file a node's installer puts in place (the shape of components.proto's Component). */
export interface SimulatedComponent {
  url: string
  hash: string
  installPath: string
  extract: boolean
}

/**
 * The Kubernetes components of `version` in the simulator: what dl.k8s.io's kubeadm and kubelet are
 * on a machine, here launchers of the kubeadm fake and the kubelet stand-in that know their version
 * (KUBEADM_FAKE_VERSION, KUBELET_FAKE_VERSION), as data: URLs with their sha256, so the node's
 * installer really downloads, hash-checks and installs them. An upgrade to another version
 * installs that version's launchers, and the kubelet unit, restarted, reports the new version.
 */
export function simulatedComponents(
  version: string,
  files: { nodeBinary: string; kubeadmFake: string; kubeletUnit: string },
): SimulatedComponent[] {
  if (!/^v\d+\.\d+\.\d+$/.test(version))
    throw new Error(`${JSON.stringify(version)} is not a version like v1.32.9`)
  const standIn = path.join(path.dirname(files.kubeletUnit), 'kubelet')
  const launcher = (env: string, script: string) =>
    Buffer.from(`#!/bin/sh\n${env}=${version} exec '${files.nodeBinary}' '${script}' "$@"\n`)
  const component = (bytes: Buffer, installPath: string): SimulatedComponent => ({
    // a data: URL, so the node's installer really installs (and hash-checks) it: no download server
    url: `data:application/octet-stream;base64,${bytes.toString('base64')}`,
    hash: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
    installPath,
    extract: false,
  })
  return [
    component(launcher('KUBEADM_FAKE_VERSION', files.kubeadmFake), '/run/state/bin/kubeadm'),
    component(launcher('KUBELET_FAKE_VERSION', standIn), '/run/state/bin/kubelet'),
  ]
}
