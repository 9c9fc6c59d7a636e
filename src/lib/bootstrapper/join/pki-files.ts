/**
 * The cluster PKI a joining control plane receives (`control_plane_files`), written under the
 * node's kubeadm PKI directory. A name comes from the network: one that could leave the directory
 * is refused, whatever the join service meant by it.
 */
import path from 'node:path'
import { writeSecretFile } from '../../system/index.js'

export interface PkiFile {
  /** Relative to the PKI directory, e.g. `ca.key`, `etcd/ca.crt`. */
  name: string
  data: Buffer
}

/** Why the name may not be written under the PKI directory; undefined when it may. */
export function pkiFileNameProblem(name: string): string | undefined {
  if (name === '') return 'empty name'
  if (path.isAbsolute(name) || name.startsWith('\\')) return 'absolute path'
  if (name.includes('..')) return 'contains ".."'
  if (name.includes('\0')) return 'contains a NUL byte'
  if (name.endsWith('/')) return 'names a directory'
  return undefined
}

/** Every file 0600 (keys and certificates alike: nothing but root reads them); refuses before writing any. */
export async function writePkiFiles(pkiDir: string, files: readonly PkiFile[]): Promise<void> {
  for (const file of files) {
    const problem = pkiFileNameProblem(file.name)
    if (problem) throw new Error(`control-plane file ${JSON.stringify(file.name)}: ${problem}`)
  }
  for (const file of files) await writeSecretFile(path.join(pkiDir, file.name), file.data, 'replace')
}
