/**
 * What the FakeApiServer TEST DOUBLE answers about itself and its caller, as kube-apiserver does:
 * `/version`; the health endpoints `/livez` and `/readyz` (and the older `/healthz`), each `ok`, with
 * `?verbose` listing the checks and `?exclude=` skipping some, and a check's own path
 * (`/readyz/ping`); and the SelfSubjectReview of `kubectl auth whoami`. Health and version are
 * anyone's to read, as kube-apiserver's system:public-info-viewer role grants them. The checks are
 * the fake's own: it has no etcd or informers to report on.
 */

/**
 * The Kubernetes version the fake reports before kubeadm uploaded one (kubeadm's fake reports the
 * same by default). After that it is the ClusterConfiguration's kubernetesVersion: `kubeadm upgrade
 * apply` moves the API server's static pod and that record together, so the API server the cluster
 * runs is at the recorded version.
 */
export const FAKE_KUBERNETES_VERSION = 'v1.31.13'
const VERSION = /^v(\d+)\.(\d+)\.\d+$/

/** Who the admin token is: the identity of a kubeadm cluster's admin.conf (1.29+). */
const ADMIN_USER = { username: 'kubernetes-admin', groups: ['kubeadm:cluster-admins'] } as const

/** GET /version: version.Info as kube-apiserver fills it. */
export function versionInfo(recorded?: string) {
  const version = recorded !== undefined && VERSION.test(recorded) ? recorded : FAKE_KUBERNETES_VERSION
  const [, major = '1', minor = '0'] = VERSION.exec(version) ?? []
  return {
    major,
    minor,
    gitVersion: version,
    gitCommit: '0000000000000000000000000000000000000000',
    gitTreeState: 'clean',
    buildDate: '1970-01-01T00:00:00Z',
    goVersion: 'go1.22.12',
    compiler: 'gc',
    platform: 'linux/amd64',
  }
}

const CHECKS: Record<string, readonly string[]> = {
  healthz: ['ping', 'log'],
  livez: ['ping', 'log'],
  readyz: ['ping', 'log', 'shutdown'],
}

/** A health endpoint's plain-text answer; undefined when `pathname` is none. */
export function healthResponse(
  pathname: string,
  q: URLSearchParams,
): { code: number; body: string } | undefined {
  const [endpoint = '', check, ...rest] = pathname.split('/').filter(Boolean)
  const checks = CHECKS[endpoint]
  if (!checks) return undefined
  if (check !== undefined) {
    if (rest.length > 0 || !checks.includes(check)) return { code: 404, body: '404 page not found\n' }
    return { code: 200, body: 'ok' }
  }
  if (!q.has('verbose')) return { code: 200, body: 'ok' }
  const excluded = new Set(q.getAll('exclude'))
  const lines = checks.map((c) => (excluded.has(c) ? `[+]${c} excluded: ok` : `[+]${c} ok`))
  return { code: 200, body: `${lines.join('\n')}\n${endpoint} check passed\n` }
}

/** POST selfsubjectreviews: the caller's user, who is the admin (the only credential the fake takes). */
export function selfSubjectReview(apiVersion: string, now = new Date()) {
  return {
    kind: 'SelfSubjectReview',
    apiVersion,
    metadata: { creationTimestamp: now.toISOString().replace(/\.\d{3}Z$/, 'Z') },
    status: {
      userInfo: { username: ADMIN_USER.username, groups: [...ADMIN_USER.groups, 'system:authenticated'] },
    },
  }
}
