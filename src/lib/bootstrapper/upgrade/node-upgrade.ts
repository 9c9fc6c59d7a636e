/**
 * One node's step of a Kubernetes upgrade, in kubeadm's documented order: every component of the
 * target version is downloaded and verified first (a bad hash or an unreachable URL changes
 * nothing); then kubeadm and the other components but the kubelet are put in place, `kubeadm
 * upgrade plan` + `kubeadm upgrade apply VERSION` run on the first control plane and `kubeadm
 * upgrade node` on every other node; then the kubelet is replaced and restarted. Constellation's
 * upgrade agent does the same (ExecuteUpdate); the order of nodes is the caller's.
 */
import { existsSync } from 'node:fs'
import { chainMessage, messageOf } from '../../errors/index.js'
import type { NodePaths } from '../../paths.js'
import { CommandFailedError, writeFileAtomic, type Logger, type Runner } from '../../system/index.js'
import {
  encodeComponents,
  isPatchRelease,
  parseKubernetesVersion,
  type KubernetesComponent,
} from '../../versions/index.js'
import { checkComponents, type StagedComponents } from '../components/installer.js'
import { NODE_UPGRADE_STEPS, type NodeUpgradeRequest, type NodeUpgradeStep } from '../../nodeupgrade/index.js'

export interface NodeUpgradeResult {
  kubernetesVersion: string
  step: NodeUpgradeStep
  /** What kubeadm printed (stdout and stderr), for the node's log and the caller's report. */
  kubeadmOutput: string
}

export const NODE_UPGRADE_PHASES = ['request', 'download', 'install', 'kubeadm', 'kubelet'] as const
export type NodeUpgradePhase = (typeof NODE_UPGRADE_PHASES)[number]

/** A step that failed: where, why, and kubeadm's own words when kubeadm failed. */
export class NodeUpgradeError extends Error {
  constructor(
    readonly phase: NodeUpgradePhase,
    message: string,
    /** true once something on the node changed: the node needs the step again (or a look). */
    readonly nodeChanged: boolean,
    readonly kubeadmOutput?: string,
    opts?: ErrorOptions,
  ) {
    super(message, opts)
    this.name = 'NodeUpgradeError'
  }
}

/** kubeadm upgrade apply restarts every static pod and waits for each: minutes, not seconds. */
export const KUBEADM_UPGRADE_TIMEOUT_MS = 15 * 60_000
export const KUBEADM_PLAN_TIMEOUT_MS = 2 * 60_000
export const KUBELET_RESTART_TIMEOUT_MS = 90_000
/** Where the node's kubelet is installed, as components name it (from `/`). */
const KUBELET_INSTALL_PATH = '/run/state/bin/kubelet'
const KUBELET_UNIT = 'kubelet.service'
/**
 * CoreDNS is a Helm release here (init skips kubeadm's addon/coredns), so kubeadm's CoreDNS checks
 * would judge a Deployment kubeadm does not own; Constellation's upgrade agent ignores the same two.
 */
const IGNORED_PREFLIGHT_ERRORS = 'CoreDNSMigration,CoreDNSUnsupportedPlugins'
/** A failed kubeadm's output is quoted this far (its end, where the error is). */
const MAX_OUTPUT_CHARS = 16 * 1024

export interface NodeUpgradeDeps {
  paths: NodePaths
  /** The kubeadm binary (the node config's; the component installs it there). */
  kubeadm: string
  runner: Runner
  /** stageComponents with the node's installer settings: downloads, verifies, changes nothing. */
  stage: (components: readonly KubernetesComponent[]) => Promise<StagedComponents>
  log: Logger
  signal?: AbortSignal
  kubeadmTimeoutMs?: number
}

export async function upgradeNode(
  req: NodeUpgradeRequest,
  deps: NodeUpgradeDeps,
): Promise<NodeUpgradeResult> {
  const { paths, log } = deps
  checkRequest(req, paths)
  log.info('Upgrading this node', { kubernetesVersion: req.kubernetesVersion, step: req.step })
  let staged: StagedComponents
  try {
    staged = await deps.stage(req.components)
  } catch (cause) {
    throw new NodeUpgradeError(
      'download',
      `downloading and verifying the components of ${req.kubernetesVersion}: ${chainMessage(cause)}; nothing on the node was changed`,
      false,
      undefined,
      { cause },
    )
  }
  try {
    await staged
      .install((c) => c.installPath !== KUBELET_INSTALL_PATH)
      .catch((cause: unknown) => {
        throw new NodeUpgradeError(
          'install',
          `installing the components of ${req.kubernetesVersion}: ${messageOf(cause)}`,
          true,
          undefined,
          { cause },
        )
      })
    const kubeadmOutput = await runKubeadm(req, deps)
    await staged.install().catch((cause: unknown) => {
      throw new NodeUpgradeError(
        'kubelet',
        `installing the kubelet of ${req.kubernetesVersion}: ${messageOf(cause)}`,
        true,
        kubeadmOutput,
        { cause },
      )
    })
    await restartKubelet(deps, kubeadmOutput)
    // a control plane's join service hands these to joining nodes (versions/components-file.ts)
    if (existsSync(paths.componentsFile))
      await writeFileAtomic(paths.componentsFile, encodeComponents(req.components))
    log.info('Upgraded this node', { kubernetesVersion: req.kubernetesVersion, step: req.step })
    return { kubernetesVersion: req.kubernetesVersion, step: req.step, kubeadmOutput }
  } finally {
    await staged.discard()
  }
}

function checkRequest(req: NodeUpgradeRequest, paths: NodePaths): void {
  const refuse = (why: string): never => {
    throw new NodeUpgradeError('request', why, false)
  }
  if (
    !isPatchRelease(parseKubernetesVersion(req.kubernetesVersion)) ||
    !req.kubernetesVersion.startsWith('v')
  )
    refuse(`kubernetes version ${JSON.stringify(req.kubernetesVersion)} is not of the form v1.32.9`)
  if (!(NODE_UPGRADE_STEPS as readonly string[]).includes(req.step))
    refuse(`step ${JSON.stringify(req.step)} is not one of ${NODE_UPGRADE_STEPS.join(', ')}`)
  for (const needed of ['/run/state/bin/kubeadm', KUBELET_INSTALL_PATH])
    if (!req.components.some((c) => c.installPath === needed))
      refuse(
        `the components of ${req.kubernetesVersion} install nothing at ${needed}: an upgrade needs kubeadm and the kubelet`,
      )
  try {
    checkComponents(req.components, paths.root)
  } catch (err) {
    refuse(`components: ${messageOf(err)}`)
  }
}

/** `upgrade plan` then `upgrade apply` on the first control plane, `upgrade node` elsewhere. */
async function runKubeadm(req: NodeUpgradeRequest, deps: NodeUpgradeDeps): Promise<string> {
  const { paths } = deps
  const controlPlane = existsSync(paths.adminConf)
  if (req.step === 'apply' && !controlPlane)
    throw new NodeUpgradeError(
      'kubeadm',
      `kubeadm upgrade apply runs on a control plane, and ${paths.adminConf} is missing`,
      true,
    )
  // a worker has no admin.conf: kubelet.conf, which kubeadm upgrade node falls back to by itself
  const kubeconfig = ['--kubeconfig', controlPlane ? paths.adminConf : paths.kubeletConf]
  // kubeadm refuses a --patches directory that does not exist; a node whose components carry no
  // image patches has none
  const patches = existsSync(paths.kubeadmPatchDir) ? ['--patches', paths.kubeadmPatchDir] : []
  const common = ['--ignore-preflight-errors', IGNORED_PREFLIGHT_ERRORS, ...patches, ...kubeconfig]
  const runs: [string, string[], number][] =
    req.step === 'apply'
      ? [
          [
            'plan',
            [
              'upgrade',
              'plan',
              req.kubernetesVersion,
              '--ignore-preflight-errors',
              IGNORED_PREFLIGHT_ERRORS,
              ...kubeconfig,
            ],
            KUBEADM_PLAN_TIMEOUT_MS,
          ],
          [
            'apply',
            ['upgrade', 'apply', req.kubernetesVersion, '--yes', ...common],
            deps.kubeadmTimeoutMs ?? KUBEADM_UPGRADE_TIMEOUT_MS,
          ],
        ]
      : [['node', ['upgrade', 'node', ...common], deps.kubeadmTimeoutMs ?? KUBEADM_UPGRADE_TIMEOUT_MS]]
  let output = ''
  for (const [name, args, timeoutMs] of runs) {
    deps.log.info(`Running kubeadm upgrade ${name}`, { kubernetesVersion: req.kubernetesVersion })
    try {
      const r = await deps.runner.run(deps.kubeadm, args, { timeoutMs, signal: deps.signal })
      output += r.stdout + r.stderr
    } catch (cause) {
      const said = cause instanceof CommandFailedError ? tail(cause.stdout + cause.stderr) : ''
      deps.log.error(`kubeadm upgrade ${name} failed`, { error: messageOf(cause) })
      throw new NodeUpgradeError(
        'kubeadm',
        `kubeadm upgrade ${name} ${name === 'node' ? '' : req.kubernetesVersion + ' '}failed: ${messageOf(cause)}`.replace(
          '  ',
          ' ',
        ),
        // plan changes nothing; apply and node may have moved static pods or configs
        name !== 'plan',
        said,
        { cause },
      )
    }
  }
  return tail(output)
}

async function restartKubelet(deps: NodeUpgradeDeps, kubeadmOutput: string): Promise<void> {
  try {
    await deps.runner.run('systemctl', ['restart', KUBELET_UNIT], {
      timeoutMs: KUBELET_RESTART_TIMEOUT_MS,
      signal: deps.signal,
    })
  } catch (cause) {
    throw new NodeUpgradeError(
      'kubelet',
      `restarting ${KUBELET_UNIT}: ${messageOf(cause)}`,
      true,
      kubeadmOutput,
      { cause },
    )
  }
}

const tail = (text: string) => (text.length > MAX_OUTPUT_CHARS ? '…' + text.slice(-MAX_OUTPUT_CHARS) : text)
