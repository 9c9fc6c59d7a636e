/** Where the package's fakes are (kubeadm, systemctl, the kubelet unit, the stand-in charts), and the kubelet unit rendered for a node root. */
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
