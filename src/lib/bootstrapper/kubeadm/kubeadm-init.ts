/** Runs `kubeadm init` the way Constellation does: preflight, certs, init without those phases, then the admin kubeconfig. */
import { mkdir, readFile, rm } from 'node:fs/promises'
import path from 'node:path'
import type { NodePaths } from '../../paths.js'
import {
  CommandFailedError,
  writeFileAtomic,
  type Logger,
  type Runner,
  writeSecretFile,
} from '../../system/index.js'
import { renderKubeadmInitConfig, skippedInitPhases, type KubeadmInitInput } from './kubeadm-config.js'
import { withKubeadmConfig, writeAuditPolicy } from './kubeadm-files.js'

export interface KubeadmDeps {
  runner: Runner
  /** The kubeadm binary. */
  kubeadm: string
  paths: NodePaths
  /** Receives kubeadm's output, which belongs to the node's log. */
  recordOutput: (text: string) => void
  log: Logger
  now?: () => Date
}

/** Returns the admin kubeconfig (`kubeadm kubeconfig user … --org system:masters`). */
export async function runKubeadmInit(input: KubeadmInitInput, deps: KubeadmDeps): Promise<Buffer> {
  const { paths } = deps
  await writeAuditPolicy(paths)
  const render = () => renderKubeadmInitConfig(input)
  return withKubeadmConfig(paths, 'init', render, async (config) => {
    const kubeadm = (step: string, args: string[]) => runStep(step, args, deps)
    // The kubelet's key and extensions are made while kubeadm runs; only the CA signature waits for it.
    const kubeletCert = startKubeletCert(input, deps)
    kubeletCert.catch(() => {}) // awaited (and reported) after the certificates phase
    await kubeadm('preflight', ['init', 'phase', 'preflight', '-v=5', '--config', config])
    // kubeadm refuses to write static pod manifests into a non-empty directory. Emptied after the
    // preflight checks (as Constellation does), while the certificates phase runs: it writes only pki/.
    const manifestsReset = resetManifestsDir(paths)
    manifestsReset.catch(() => {}) // awaited below, after the certificates phase
    await kubeadm('certificates', ['init', 'phase', 'certs', 'all', '-v=5', '--config', config])
    await kubeletCert
      .then((prepared) => writeKubeletCert(input, prepared))
      .catch((cause: unknown) => {
        throw new Error('issuing the kubelet certificate', { cause })
      })
    await manifestsReset
    await kubeadm('init', [
      'init',
      '-v=5',
      `--skip-phases=${skippedInitPhases(input.conformance).join(',')}`,
      '--config',
      config,
    ])
    const admin = await kubeadm('admin kubeconfig', [
      'kubeconfig',
      'user',
      '--client-name',
      `${input.clusterName}-admin`,
      '--config',
      config,
      '--org',
      'system:masters',
    ])
    return Buffer.from(admin)
  })
}

async function resetManifestsDir(paths: NodePaths): Promise<void> {
  await rm(paths.manifestsDir, { recursive: true, force: true })
  await mkdir(paths.manifestsDir, { recursive: true })
}

async function startKubeletCert(input: KubeadmInitInput, deps: KubeadmDeps) {
  // loaded here, not at start: an idle bootstrapper has no use for the kubelet certificate code
  const { prepareKubeletCert } = await import('./kubelet-cert.js')
  return prepareKubeletCert({
    nodeName: input.nodeName,
    ips: [input.nodeIP],
    now: (deps.now ?? (() => new Date()))(),
  })
}

/** kubeadm does not sign the kubelet's certificate; the KubeletConfiguration points at this one. */
async function writeKubeletCert(
  input: KubeadmInitInput,
  prepared: Awaited<ReturnType<typeof startKubeletCert>>,
): Promise<void> {
  const pki = input.paths.certificatesDir
  const [caCert, caKey] = await Promise.all([
    readFile(path.join(pki, 'ca.crt'), 'utf8'),
    readFile(path.join(pki, 'ca.key'), 'utf8'),
  ])
  const { certPem, keyPem } = prepared.sign(caCert, caKey)
  // 0600 like a joined node's: only the kubelet (root) reads them
  await Promise.all([
    writeFileAtomic(input.paths.kubeletCert, certPem),
    writeSecretFile(input.paths.kubeletKey, keyPem, 'replace'),
  ])
}

async function runStep(step: string, args: string[], deps: KubeadmDeps): Promise<string> {
  deps.log.info('Running kubeadm', { step })
  const started = performance.now()
  try {
    const { stdout, stderr } = await deps.runner.run(deps.kubeadm, args)
    deps.log.info('kubeadm finished', { step, durationMs: Math.round(performance.now() - started) })
    // The kubeconfig on stdout of `kubeconfig user` holds a client key: it must not reach the log.
    deps.recordOutput(args[0] === 'kubeconfig' ? stderr : stdout + stderr)
    return stdout
  } catch (err) {
    if (err instanceof CommandFailedError) deps.recordOutput(err.stdout + err.stderr)
    throw new Error(`kubeadm ${step}`, { cause: err })
  }
}
