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
    objectStore: () => createS3Store({ endpoint: opts.s3Endpoint }),
    registerToken: registerTokenSecret,
    managementApi: (kubeconfig) => openKubeApi(kubeconfig),
    initSecretHash: async (workspace) => (await initSecretHashFor(workspace)).initSecretHash,
  }
}
