/** After the node answered: save everything it sent, then the optional merge (a warning if it fails). */
import type { ClusterConfig, ClusterState } from '../config/index.js'
import { chainMessage, messageOf } from '../errors/index.js'
import type { WorkspacePaths } from '../paths.js'
import type { InitDeps, InitOptions, InitResult } from './init.js'
import {
  mergeIntoUserKubeconfig,
  nameEntriesAfterCluster,
  pointAtEndpoint,
  userKubeconfigPath,
} from './kubeconfig.js'
import { nextSteps } from './next-steps.js'
import type { InitOutcome } from './rpc.js'
import { saveInitResult } from './save.js'
import type { MasterSecretSource } from './workspace.js'

/** A fresh init's answer or a resumed one's: saved alike (the kubeconfig never over an existing file). */
export async function saveAnswer(
  outcome: Extract<InitOutcome, { ok: true }>,
  c: {
    opts: InitOptions
    deps: InitDeps
    paths: WorkspacePaths
    state: ClusterState
    measurementSalt: Buffer
    endpoint: { host: string }
    config: ClusterConfig
    source: MasterSecretSource
    resumed: boolean
  },
): Promise<InitResult> {
  const clusterID = outcome.clusterId.toString('hex')
  const warnings: string[] = []
  let kubeconfig: string
  try {
    kubeconfig = pointAtEndpoint(outcome.kubeconfig, c.endpoint.host)
  } catch (err) {
    kubeconfig = outcome.kubeconfig.toString('utf8') // kept as the node sent it rather than lost
    warnings.push(`the kubeconfig could not be pointed at ${c.endpoint.host}: ${messageOf(err)}`)
  }
  const saved = await saveInitResult(
    {
      paths: c.paths,
      state: c.state,
      clusterID,
      measurementSalt: c.measurementSalt.toString('hex'),
      kubeconfig,
    },
    {
      now: c.deps.now ?? (() => new Date()),
      printLastResort: c.deps.printLastResort,
    },
  )
  warnings.push(...saved.warnings)
  let mergedInto: string | undefined
  if (c.opts.mergeKubeconfig) {
    const entryName = `${c.state.infrastructure.name}-${clusterID.slice(0, 8)}`
    const file = userKubeconfigPath(c.deps.env)
    mergedInto = await mergeIntoUserKubeconfig(nameEntriesAfterCluster(kubeconfig, entryName), file).then(
      () => file,
      (err: unknown) => {
        warnings.push(`not merged into ${file}: ${chainMessage(err)}; use ${saved.kubeconfig} directly`)
        return undefined
      },
    )
  }
  return {
    resumed: c.resumed,
    clusterID,
    kubeconfig: saved.kubeconfig,
    masterSecret: c.paths.masterSecret,
    masterSecretSource: c.source,
    state: c.paths.state,
    mergedInto,
    warnings,
    releases: [],
    nextSteps: c.opts.skipHelm
      ? nextSteps({ workspace: c.opts.workspace, conformance: c.opts.conformance })
      : [],
  }
}
