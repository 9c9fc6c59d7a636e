/**
 * Every helm command line the CLI runs, per major version, in one place: the flags differ between
 * helm 3 and 4 (helm 4 has no `list --all`, and waits by strategy), and a test runs each of these
 * through the real helm 3 and helm 4 binaries so that no argv reaches an operator unchecked.
 */
import { formatDuration } from '../../system/index.js'

export type HelmMajor = 3 | 4

/** Asked before the major is known; every helm since 3.0 takes it. */
export const VERSION_ARGS: readonly string[] = ['version', '--template', '{{.Version}}']

/** What a chart command needs of a release: which chart, where from, which version, where to. */
export interface ChartSource {
  name: string
  /** A chart name in `repository`, or a local chart directory / packaged `.tgz`. */
  chart: string
  repository?: string
  /** Exact chart version. */
  version: string
  namespace: string
}

export function helmArgs(major: HelmMajor, kubeconfig?: string) {
  const kube = kubeconfig ? ['--kubeconfig', kubeconfig] : []
  // helm 3 waits with a boolean --wait; helm 4 takes a strategy, and watcher is what --wait meant.
  const wait = major === 3 ? '--wait' : '--wait=watcher'
  const rollbackOnFailure = major === 3 ? '--atomic' : '--rollback-on-failure'
  const source = (t: ChartSource) =>
    t.repository ? ['--repo', t.repository, '--version', t.version] : ['--version', t.version]
  return {
    // helm 3 lists only deployed and failed releases unless --all; helm 4 lists every status and
    // refuses --all. Pending releases must show up: the plan skips them.
    list: () => ['list', '--all-namespaces', ...(major === 3 ? ['--all'] : []), '--output', 'json', ...kube],
    status: (name: string, namespace: string) => [
      'status',
      name,
      '--namespace',
      namespace,
      '--output',
      'json',
      ...kube,
    ],
    /**
     * `upgrade --install`, rolled back by helm on failure; values only ever come from the file.
     * Without `wait` (init --skip-helm-wait) helm returns once the objects are written, and has
     * nothing to roll back on: both flags imply waiting.
     */
    upgrade: (
      t: ChartSource,
      valuesFile: string,
      timeoutMs: number,
      opts: { wait: boolean } = { wait: true },
    ) => [
      'upgrade',
      '--install',
      t.name,
      t.chart,
      ...source(t),
      '--namespace',
      t.namespace,
      '--create-namespace',
      '--reset-values',
      '--values',
      valuesFile,
      ...(opts.wait ? [rollbackOnFailure, wait] : []),
      '--timeout',
      goDuration(timeoutMs),
      ...kube,
    ],
    /** To `revision` (without one helm takes the one before the newest: a failed upgrade's). */
    rollback: (name: string, namespace: string, timeoutMs: number, revision?: number) => [
      'rollback',
      name,
      ...(revision ? [String(revision)] : []),
      '--namespace',
      namespace,
      wait,
      '--timeout',
      goDuration(timeoutMs),
      ...kube,
    ],
    /** Renders without the cluster, CRDs included. */
    template: (t: ChartSource, valuesFile: string) => [
      'template',
      t.name,
      t.chart,
      ...source(t),
      '--namespace',
      t.namespace,
      '--values',
      valuesFile,
      '--include-crds',
    ],
    showChart: (chartPath: string) => ['show', 'chart', chartPath],
    /** The values set on the release (helm's "user-supplied values", ours included). */
    getValues: (name: string, namespace: string, output: 'yaml' | 'json') => [
      'get',
      'values',
      name,
      '--namespace',
      namespace,
      '--output',
      output,
      ...kube,
    ],
    getManifest: (name: string, namespace: string) => [
      'get',
      'manifest',
      name,
      '--namespace',
      namespace,
      ...kube,
    ],
  }
}

export type HelmArgs = ReturnType<typeof helmArgs>

/** Helm's `--timeout` in Go's own form (Helm rejects `d`, which the CLI accepts): 600000 → 10m0s. */
const goDuration = (ms: number): string => formatDuration(ms)
