/** Embedded file bodies (systemd units, script prologue) from templates/bootstrapdata, read once by the caller. */
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

export interface BootstrapTemplates {
  kubeadmUnit: string
  kubeadmPrologue: string
  /** `{{what}}`, `{{where}}` and `{{options}}` are filled per mount. */
  mountUnit: string
}

// src/lib/bootstrapdata and dist/lib/bootstrapdata both sit three levels below the package root.
const TEMPLATE_DIR = new URL('../../../templates/bootstrapdata/', import.meta.url)

export async function loadTemplates(dir: URL = TEMPLATE_DIR): Promise<BootstrapTemplates> {
  const read = (name: string) => readFile(fileURLToPath(new URL(name, dir)), 'utf8')
  const [kubeadmUnit, kubeadmPrologue, mountUnit] = await Promise.all([
    read('kubeadm.service'),
    read('kubeadm-prologue.sh'),
    read('mount.unit'),
  ])
  return { kubeadmUnit, kubeadmPrologue, mountUnit }
}
