/** What a bootstrapped control plane keeps for its services: the secrets they read, the join-config, the components. */
import type { NodePaths } from '../paths.js'
import { writeFileAtomic, writeSecretFile } from '../system/index.js'
import { encodeComponents, type KubernetesComponent } from '../versions/index.js'

export interface ServiceSecrets {
  masterSecret: Buffer
  salt: Buffer
  measurementSecret: Buffer
  measurementSalt: Buffer
}

/** The files under /var/config the key service and join service load; raw bytes, 0600. */
export async function writeServiceSecrets(paths: NodePaths, secrets: ServiceSecrets): Promise<void> {
  await writeSecretFile(paths.masterSecretFile, secrets.masterSecret, 'replace')
  await writeSecretFile(paths.masterSaltFile, secrets.salt, 'replace')
  await writeMeasurementSecrets(paths, secrets)
}

export async function writeMeasurementSecrets(
  paths: NodePaths,
  secrets: Pick<ServiceSecrets, 'measurementSecret' | 'measurementSalt'>,
): Promise<void> {
  await writeSecretFile(paths.measurementSecretFile, secrets.measurementSecret, 'replace')
  await writeSecretFile(paths.measurementSaltFile, secrets.measurementSalt, 'replace')
}

/** What a control plane's join service hands out besides keys: the join-config and the components. */
export interface ClusterFiles {
  /** The encoded join-config; absent when the operator sent no measurements (then nobody can join until they do). */
  joinConfig?: string
  components: readonly KubernetesComponent[]
}

export async function writeClusterFiles(paths: NodePaths, files: ClusterFiles): Promise<void> {
  if (files.joinConfig !== undefined) await writeFileAtomic(paths.joinConfigFile, files.joinConfig)
  await writeFileAtomic(paths.componentsFile, encodeComponents(files.components))
}
