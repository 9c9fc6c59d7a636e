/** What a bootstrapped node keeps: its role and measurement salt, and the secrets its control-plane services read. */
import path from 'node:path'
import type { NodePaths } from '../paths.js'
import { writeFileAtomic } from '../system/index.js'

export type NodeStateRole = 'ControlPlane' | 'Worker'

/** node-state.json as Constellation writes it (Role as its name, salt in standard base64). */
export async function writeNodeState(
  paths: NodePaths,
  role: NodeStateRole,
  measurementSalt: Buffer,
): Promise<void> {
  const body = JSON.stringify({ Role: role, MeasurementSalt: measurementSalt.toString('base64') })
  await writeFileAtomic(paths.nodeStateFile, body + '\n')
}

export interface ServiceSecrets {
  masterSecret: Buffer
  salt: Buffer
  measurementSecret: Buffer
  measurementSalt: Buffer
}

/** The files under /var/config the key service and join service load; raw bytes, 0600. */
export async function writeServiceSecrets(paths: NodePaths, secrets: ServiceSecrets): Promise<void> {
  const files: Record<string, Buffer> = {
    mastersecret: secrets.masterSecret,
    salt: secrets.salt,
    measurementSecret: secrets.measurementSecret,
    measurementSalt: secrets.measurementSalt,
  }
  for (const [name, data] of Object.entries(files))
    await writeFileAtomic(path.join(paths.serviceConfigDir, name), data)
}
