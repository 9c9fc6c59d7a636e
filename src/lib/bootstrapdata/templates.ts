/** Embedded file bodies (systemd units, script prologue) from templates/bootstrapdata, read once by the caller. */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { packageFile } from '../paths.js'

export interface BootstrapTemplates {
  kubeadmUnit: string
  kubeadmPrologue: string
  /** `{{what}}`, `{{where}}` and `{{options}}` are filled per mount. */
  mountUnit: string
}

export async function loadTemplates(
  dir: string = packageFile('templates', 'bootstrapdata'),
): Promise<BootstrapTemplates> {
  const read = (name: string) => readFile(path.join(dir, name), 'utf8')
  const [kubeadmUnit, kubeadmPrologue, mountUnit] = await Promise.all([
    read('kubeadm.service'),
    read('kubeadm-prologue.sh'),
    read('mount.unit'),
  ])
  return { kubeadmUnit, kubeadmPrologue, mountUnit }
}
