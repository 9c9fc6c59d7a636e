/**
 * kubeadm's input files, written one way for init and join: the audit policy replaced in place, the
 * config in a new file in a temp directory only this run knows, removed when kubeadm is done. Both
 * are 0600 (system/files.ts) and never written through a symlink planted at their path.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import path from 'node:path'
import type { NodePaths } from '../../paths.js'
import { writeFileAtomic, writeSecretFile } from '../../system/index.js'
import { renderAuditPolicy } from './kubeadm-config.js'

/** The API server's audit policy, which the control plane's kubeadm config points at. */
export async function writeAuditPolicy(paths: NodePaths): Promise<void> {
  await writeFileAtomic(paths.auditPolicy, renderAuditPolicy())
}

/** Runs `use` with the config written to kubeadm-<command>.yaml, then removes it. */
export async function withKubeadmConfig<T>(
  paths: NodePaths,
  command: 'init' | 'join',
  render: () => string,
  use: (file: string) => Promise<T>,
): Promise<T> {
  await mkdir(paths.runtimeDir, { recursive: true, mode: 0o700 })
  const dir = await mkdtemp(path.join(paths.runtimeDir, `kubeadm-${command}.`))
  try {
    const file = path.join(dir, `kubeadm-${command}.yaml`)
    await writeSecretFile(file, render(), 'exclusive') // a join config holds its token
    return await use(file)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
