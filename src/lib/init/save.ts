/**
 * Local writes after the node answered. From here on the node is initialized: no local error may
 * lose what it sent, and every message says exactly where things ended up.
 */
import { constants } from 'node:fs'
import { open } from 'node:fs/promises'
import type { ClusterState } from '../config/index.js'
import { CliError, isErrnoException, messageOf } from '../errors/index.js'
import type { WorkspacePaths } from '../paths.js'
import { SECRET_FILE_MODE, writeSecretFile } from '../system/index.js'
import { stringifyYaml } from '../yaml/index.js'

export interface SaveDeps {
  writeExclusive?: (file: string, data: string) => Promise<void>
  recordState?: (file: string, data: string) => Promise<void>
  now: () => Date
  /** Where the kubeconfig goes when no file can take it: stdout. */
  printLastResort: (kubeconfig: string) => void
}

export interface Saved {
  /** Where the admin kubeconfig is; "stdout" when only printed. */
  kubeconfig: string
  warnings: string[]
}

export async function saveInitResult(
  input: {
    paths: WorkspacePaths
    state: ClusterState
    clusterID: string
    measurementSalt: string
    kubeconfig: string
  },
  deps: SaveDeps,
): Promise<Saved> {
  const { paths, clusterID } = input
  const writeExclusive = deps.writeExclusive ?? ((file, data) => writeSecretFile(file, data, 'exclusive'))
  const recordState = deps.recordState ?? ((file, data) => writeSecretFile(file, data, 'replace'))
  const updated: ClusterState = {
    ...input.state,
    clusterValues: { clusterID, ownerID: '', measurementSalt: input.measurementSalt },
  }
  // two files apart: neither write waits for the other, and each failure is reported on its own;
  // the kubeconfig, which the operator waits for, is on its way before the state is rendered
  const failure = (err: unknown) => messageOf(err)
  const kubeconfigWritten = writeExclusive(paths.adminConf, input.kubeconfig).then(() => undefined, failure)
  const [first, stateError] = await Promise.all([
    kubeconfigWritten,
    recordState(paths.state, stringifyYaml(updated)).then(() => undefined, failure),
  ])
  const warnings: string[] = []
  let kubeconfig = paths.adminConf
  if (first) {
    const fallback = `${paths.adminConf}.${deps.now().toISOString().replace(/[:.]/g, '-')}`
    const second = await writeExclusive(fallback, input.kubeconfig).then(
      () => undefined,
      (err: unknown) => messageOf(err),
    )
    if (second) {
      deps.printLastResort(input.kubeconfig)
      kubeconfig = 'stdout'
      warnings.push(
        `${paths.adminConf} could not be written (${first}), nor ${fallback} (${second}): the admin kubeconfig was printed to stdout; save it (0600) before anything else`,
      )
    } else {
      kubeconfig = fallback
      warnings.push(
        `${paths.adminConf} could not be written (${first}): the admin kubeconfig is in ${fallback}`,
      )
    }
  }
  if (stateError || kubeconfig === 'stdout')
    throw new CliError(`the node initialized cluster ${clusterID}, but saving its results failed`, {
      hint: [
        ...warnings,
        stateError
          ? `${paths.state} does not record the cluster (${stateError}): set clusterValues.clusterID: ${clusterID} and clusterValues.measurementSalt: ${input.measurementSalt} in it by hand`
          : `${paths.state} records the cluster`,
        `keep ${paths.masterSecret}; do not run init again on this node`,
      ].join('; '),
    })
  return { kubeconfig, warnings }
}

/** Appends the node's logs: 0600, never through a symlink (O_NOFOLLOW), whatever the file's mode was. */
export async function appendClusterLog(file: string, logs: Buffer): Promise<void> {
  let handle
  try {
    handle = await open(
      file,
      constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW,
      SECRET_FILE_MODE,
    )
  } catch (err) {
    if (isErrnoException(err, 'ELOOP'))
      throw new Error(`${file} is a symbolic link; logs are not written through one`, { cause: err })
    throw err
  }
  try {
    await handle.chmod(SECRET_FILE_MODE)
    await handle.appendFile(logs)
  } finally {
    await handle.close()
  }
}
