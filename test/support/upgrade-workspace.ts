/** Test workspaces for upgrades: a generated config whose releases point at the fixture charts. */
import { appendFile, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { generateWorkspace } from '../../src/lib/config/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import type { Helm } from '../../src/lib/helm/index.js'
import type { FakeApiServer } from '../../src/lib/simulator/index.js'
import { FIXTURE_CHARTS } from './helm.js'

export const RELEASE_NAMESPACES: Record<string, string> = {
  cilium: 'kube-system',
  coredns: 'kube-system',
  'cert-manager': 'cert-manager',
}

/** The three pinned releases, overridden by name with fixture charts at these versions. */
export async function makeUpgradeWorkspace(
  dir: string,
  targets: Record<string, string>,
  api?: FakeApiServer,
): Promise<string> {
  await generateWorkspace({
    workspace: dir,
    provider: 'qemu',
    kubernetes: 'v1.31',
    variant: 'qemu-vtpm',
    name: 'upgrade-test',
    endpoint: '10.0.0.5',
  })
  await overrideChartsWithFixtures(dir, targets)
  // Helm and the API client read the admin kubeconfig; without an API server it only has to exist.
  await writeFile(workspacePaths(dir).adminConf, api ? api.kubeconfig() : 'apiVersion: v1\nkind: Config\n', {
    mode: 0o600,
  })
  return dir
}

/** The fixture coredns chart's Deployment: what tests hold unready to make helm wait. */
export const COREDNS_DEPLOYMENT = { kind: 'Deployment', namespace: 'kube-system', name: 'coredns' }

/**
 * Installs fixture releases with `helm` (a real helm against the API fake), as an earlier install
 * would have: each at its version, in its usual namespace unless `namespaces` says otherwise, with
 * `values` (YAML) set on it.
 */
export async function installFixtureReleases(
  helm: Helm,
  versions: Record<string, string>,
  opts: { namespaces?: Record<string, string>; values?: Record<string, string> } = {},
): Promise<void> {
  for (const [name, version] of Object.entries(versions))
    await helm.upgrade(
      {
        name,
        chart: path.join(FIXTURE_CHARTS, name, version),
        version,
        namespace: opts.namespaces?.[name] ?? RELEASE_NAMESPACES[name] ?? 'default',
      },
      { yaml: opts.values?.[name] ?? '{}\n' },
      60_000,
    )
}

/** Appends `upgrade.charts` to the workspace's config: each release from the fixture chart at that version. */
export async function overrideChartsWithFixtures(workspace: string, targets: Record<string, string>) {
  const charts = Object.entries(targets).map(
    ([name, version]) =>
      `    - name: ${name}\n      chart: ${path.join(FIXTURE_CHARTS, name, version)}\n      version: ${version}\n      namespace: ${RELEASE_NAMESPACES[name] ?? 'default'}\n`,
  )
  await appendFile(workspacePaths(workspace).config, `upgrade:\n  charts:\n${charts.join('')}`)
}

/** Seeds CRDs and custom resources the way the fixture cert-manager chart would have them. */
export function seedCustomResources(api: FakeApiServer, count: number): void {
  api.put('apiextensions.k8s.io/v1', 'customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'certificates.fixture.constellation.invalid' },
    spec: {
      group: 'fixture.constellation.invalid',
      scope: 'Namespaced',
      names: { plural: 'certificates', singular: 'certificate', kind: 'Certificate' },
      versions: [
        { name: 'v1', served: true, storage: true },
        { name: 'v1alpha1', served: false, storage: false },
      ],
    },
  })
  api.put('apiextensions.k8s.io/v1', 'customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'clusterissuers.fixture.constellation.invalid' },
    spec: {
      group: 'fixture.constellation.invalid',
      scope: 'Cluster',
      names: { plural: 'clusterissuers', singular: 'clusterissuer', kind: 'ClusterIssuer' },
      versions: [{ name: 'v1', served: true, storage: true }],
    },
  })
  api.put('fixture.constellation.invalid/v1', 'clusterissuers', {
    apiVersion: 'fixture.constellation.invalid/v1',
    kind: 'ClusterIssuer',
    metadata: { name: 'self-signed' },
    spec: { selfSigned: {} },
  })
  for (let i = 0; i < count; i++) {
    api.put('fixture.constellation.invalid/v1', 'certificates', {
      apiVersion: 'fixture.constellation.invalid/v1',
      kind: 'Certificate',
      metadata: { name: `cert-${String(i).padStart(5, '0')}`, namespace: `ns-${i % 7}` },
      spec: { commonName: `host-${i}.example` },
    })
  }
}
