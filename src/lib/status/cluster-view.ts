/**
 * What the Kubernetes API says about the cluster: its version and every Node with its roles,
 * internal address, readiness and kubelet version. Bounded like every API read; an error names the
 * request, never a response body.
 */
import {
  API_REQUEST_TIMEOUT_MS,
  openClusterClient,
  requestCaller,
  statusOf,
  type KubeNode,
} from '../kube/index.js'
import { readUpgradeRecord, type UpgradeRecord } from '../nodes/index.js'
import { UPGRADE_STATUS_ANNOTATION, parseStatus, type AgentStatus } from '../nodeupgrade/index.js'

export interface KubernetesNode {
  name: string
  roles: string[]
  internalIP?: string
  ready: boolean
  /** Cordoned: no new pods are scheduled on it (kubectl's SchedulingDisabled). */
  unschedulable?: boolean
  /** Why it is not Ready, from its Ready condition (a node lifecycle controller's NodeStatusUnknown). */
  notReady?: string
  kubeletVersion?: string
  /** Its upgrade agent's last answer (the status annotation), when it has one. */
  upgrade?: Pick<AgentStatus, 'id' | 'state' | 'phase' | 'message'>
}

export interface ClusterView {
  kubernetesVersion: string
  nodes: KubernetesNode[]
  /** The cluster's record of its last Kubernetes upgrade, when one ran. */
  upgrade?: UpgradeRecord
}

const ROLE_LABEL = 'node-role.kubernetes.io/'

export async function readClusterView(
  kubeconfigPath: string,
  timeoutMs = API_REQUEST_TIMEOUT_MS,
): Promise<ClusterView> {
  const api = await openClusterClient({ file: kubeconfigPath }, { requestTimeoutMs: timeoutMs })
  const call = requestCaller(api.server, timeoutMs)
  const version = await call('reading the API server version', () => api.serverVersion())
  const nodes = await call('listing Nodes', () => api.listNodes())
  const upgrade = await call('reading the Kubernetes upgrade record', () =>
    readUpgradeRecord({
      getConfigMap: (namespace, name) =>
        api.readConfigMap(namespace, name).then(
          (cm) => ({ data: cm.data ?? {}, resourceVersion: '' }),
          (err: unknown) => {
            if (statusOf(err) === 404) return undefined
            throw err
          },
        ),
    }),
  )
  return {
    kubernetesVersion: version ?? '',
    nodes: (nodes ?? []).map(nodeOf).sort((a, b) => a.name.localeCompare(b.name)),
    ...(upgrade && { upgrade }),
  }
}

type NodeCondition = NonNullable<NonNullable<KubeNode['status']>['conditions']>[number]

function nodeOf(n: KubeNode): KubernetesNode {
  const labels = n.metadata?.labels ?? {}
  const roles = Object.keys(labels)
    .filter((k) => k.startsWith(ROLE_LABEL))
    .map((k) => k.slice(ROLE_LABEL.length))
  return {
    name: n.metadata?.name ?? '',
    roles: roles.length > 0 ? roles.sort() : ['worker'],
    internalIP: n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address,
    ...readiness(n.status?.conditions?.find((c) => c.type === 'Ready')),
    ...(n.spec?.unschedulable === true && { unschedulable: true }),
    kubeletVersion: n.status?.nodeInfo?.kubeletVersion,
    ...upgradeOf(n.metadata?.annotations?.[UPGRADE_STATUS_ANNOTATION]),
  }
}

function upgradeOf(raw: string | undefined): Pick<KubernetesNode, 'upgrade'> {
  const status = parseStatus(raw)
  if (!status) return {}
  const { id, state, phase, message } = status
  return { upgrade: { id, state, ...(phase && { phase }), ...(message && { message }) } }
}

function readiness(ready: NodeCondition | undefined): Pick<KubernetesNode, 'ready' | 'notReady'> {
  if (ready?.status === 'True') return { ready: true }
  if (!ready) return { ready: false, notReady: 'it reports no Ready condition' }
  const why = [ready.reason, ready.message].filter(Boolean).join(': ')
  return { ready: false, notReady: `Ready is ${ready.status}${why ? ` (${why})` : ''}` }
}
