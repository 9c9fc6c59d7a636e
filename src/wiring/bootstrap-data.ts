/**
 * `bootstrap-data generate` with its production parts: the clock, crypto randomness, the input file,
 * the shipped templates, an S3-compatible store, the Kubernetes API for token Secrets, the workspace.
 */
import { randomBytes } from 'node:crypto'
import {
  createS3Store,
  loadTemplates,
  readInputFile,
  registerTokenSecret,
  type GenerateDeps,
} from '../lib/bootstrapdata/index.js'
import { initSecretHashFor } from '../lib/config/index.js'
import { openKubeApi } from '../lib/kube/index.js'

export async function bootstrapDataDeps(opts: { s3Endpoint?: string }): Promise<GenerateDeps> {
  return {
    now: () => new Date(),
    randomBytes,
    readInput: readInputFile,
    templates: await loadTemplates(),
    objectStore: () => {
      // The SDK warns on Node < 22 about its own releases from 2027 on; this tool supports Node 20.12
      // (package.json engines) with the SDK it ships, so the notice would only interrupt the output.
      process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
      return createS3Store({ endpoint: opts.s3Endpoint })
    },
    registerToken: registerTokenSecret,
    managementApi: (kubeconfig) => openKubeApi(kubeconfig),
    initSecretHash: async (workspace) => (await initSecretHashFor(workspace)).initSecretHash,
  }
}
