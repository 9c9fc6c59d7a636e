import { chmod, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { withTempDir } from '../support/temp.js'
import { CliError } from '../../src/lib/errors/index.js'
import { workspacePaths } from '../../src/lib/paths.js'
import { parseClusterKmsUri } from '../../src/lib/kms/index.js'
import { componentsFor } from '../../src/lib/versions/index.js'
import { parse } from 'yaml'
import { stringifyYaml } from '../../src/lib/yaml/index.js'
import { appendClusterLog, saveInitResult } from '../../src/lib/init/save.js'
import { buildInitRequest, initEndpoint } from '../../src/lib/init/request.js'
import { mergeKubeconfig, nameEntriesAfterCluster, pointAtEndpoint } from '../../src/lib/init/kubeconfig.js'
import { defaultConfig, defaultState } from '../../src/lib/config/generate.js'
import { loadState } from '../../src/lib/config/index.js'
import { interruptedLine } from '../../src/lib/init/interrupted.js'
import { chooseMeasurementSalt, recordMeasurementSalt } from '../../src/lib/init/workspace.js'

const kubeconfig = (name: string, server = 'https://10.0.0.1:6443') =>
  stringifyYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server, 'certificate-authority-data': 'Q0E=' } }],
    users: [{ name: `${name}-admin`, user: { token: 't' } }],
    contexts: [{ name: `${name}-admin@${name}`, context: { cluster: name, user: `${name}-admin` } }],
    'current-context': `${name}-admin@${name}`,
  })

/** What saveInitResult gets after a node answered cluster ab…ab (the state as config generate wrote it). */
const savedAnswer = (paths: ReturnType<typeof workspacePaths>) => ({
  paths,
  state: defaultState('c', '10.0.0.5', (n) => Buffer.alloc(n, 0x41), Buffer.alloc(32, 0x41)),
  clusterID: 'ab'.repeat(32),
  measurementSalt: 'cd'.repeat(32),
  kubeconfig: 'KUBECONFIG',
})

describe('operator init units', () => {
  it('builds the InitRequest from config, state and the master secret', () => {
    const config = defaultConfig({ kubernetes: 'v1.31', variant: 'qemu-vtpm', name: 'c' })
    const state = defaultState('c', '10.0.0.5', (n) => Buffer.alloc(n, 0x41), Buffer.alloc(32, 0x41))
    const secret = { key: Buffer.alloc(32, 1), salt: Buffer.alloc(32, 2) }
    const req = buildInitRequest(config, state, secret, Buffer.alloc(32, 3), true)
    expect(parseClusterKmsUri(req.kmsUri)).to.deep.equal(secret)
    expect(req.storageUri).to.equal('storage://no-store')
    expect(req.kubernetesVersion).to.equal('v1.31.13')
    expect(req.kubernetesComponents).to.deep.equal(componentsFor('v1.31.13'))
    expect(req.initSecret).to.deep.equal(Buffer.alloc(32, 0x41))
    expect(req.conformanceMode).to.equal(true)
    expect(req.serviceCidr).to.equal('10.96.0.0/12')
    expect(req.measurements[15]).to.deep.equal({ expected: Buffer.alloc(32), warnOnly: false })
    // tpm-ek keeps its measurements under attestation.tpmEK: the join services get the same set
    const tpmEk = defaultConfig({ kubernetes: 'v1.31', variant: 'tpm-ek', name: 'c' })
    expect(buildInitRequest(tpmEk, state, secret, Buffer.alloc(32), false).measurements).to.deep.equal(
      req.measurements,
    )
    config.kubernetesComponents = [{ url: 'http://mirror/kubeadm', installPath: '/run/state/bin/kubeadm' }]
    expect(
      buildInitRequest(config, state, secret, Buffer.alloc(32), false).kubernetesComponents,
    ).to.deep.equal([
      { url: 'http://mirror/kubeadm', hash: '', installPath: '/run/state/bin/kubeadm', extract: false },
    ])
  })

  const endpoints: Record<string, { host: string; address: string }> = {
    '10.0.0.5': { host: '10.0.0.5', address: '10.0.0.5:9000' },
    '10.0.0.5:1234': { host: '10.0.0.5', address: '10.0.0.5:1234' },
    'node.example': { host: 'node.example', address: 'node.example:9000' },
    '[fd00::1]': { host: 'fd00::1', address: '[fd00::1]:9000' },
    '[fd00::1]:9001': { host: 'fd00::1', address: '[fd00::1]:9001' },
  }
  for (const [input, want] of Object.entries(endpoints))
    it(`dials ${want.address} for clusterEndpoint ${input}`, () =>
      expect(initEndpoint(input)).to.deep.equal(want))

  it('points the kubeconfig at the cluster endpoint, keeping the port', () => {
    const out = parse(pointAtEndpoint(Buffer.from(kubeconfig('c')), '192.0.2.7')) as {
      clusters: Array<{ cluster: { server: string } }>
    }
    expect(out.clusters[0]?.cluster.server).to.equal('https://192.0.2.7:6443')
    expect(() => pointAtEndpoint(Buffer.from('clusters: []'), 'h')).to.throw(/has 0 clusters, want 1/)
  })

  it('merges into an existing kubeconfig without touching other entries, and refuses a clash', () => {
    const merged = parse(mergeKubeconfig(kubeconfig('other'), kubeconfig('c'), '/home/u/.kube/config')) as {
      clusters: Array<{ name: string }>
      'current-context': string
    }
    expect(merged.clusters.map((c) => c.name)).to.deep.equal(['other', 'c'])
    expect(merged['current-context']).to.equal('c-admin@c')
    expect(() => mergeKubeconfig(kubeconfig('c', 'https://elsewhere:6443'), kubeconfig('c'), '/k')).to.throw(
      /\/k already has a different cluster named "c"/,
    )
    expect(parse(mergeKubeconfig(undefined, kubeconfig('c'), '/k')).clusters).to.have.length(1)
  })

  it('names merged entries after the cluster and a cluster-ID prefix, so same-named clusters do not collide', () => {
    const named = parse(nameEntriesAfterCluster(kubeconfig('c'), 'c-1a2b3c4d')) as {
      clusters: Array<{ name: string; cluster: unknown }>
      users: Array<{ name: string; user: unknown }>
      contexts: Array<{ name: string; context: { cluster: string; user: string } }>
      'current-context': string
    }
    expect(named.clusters.map((c) => c.name)).to.deep.equal(['c-1a2b3c4d'])
    expect(named.users.map((u) => u.name)).to.deep.equal(['c-1a2b3c4d-admin'])
    expect(named.contexts).to.deep.equal([
      { name: 'c-1a2b3c4d', context: { cluster: 'c-1a2b3c4d', user: 'c-1a2b3c4d-admin' } },
    ])
    expect(named['current-context']).to.equal('c-1a2b3c4d')
    // renamed, not rewritten: the server, the CA and the credentials stay what the node sent
    expect(named.clusters[0]?.cluster).to.deep.equal({
      server: 'https://10.0.0.1:6443',
      'certificate-authority-data': 'Q0E=',
    })
    expect(named.users[0]?.user).to.deep.equal({ token: 't' })
    const both = parse(
      mergeKubeconfig(
        kubeconfig('c', 'https://10.0.0.9:6443'),
        nameEntriesAfterCluster(kubeconfig('c'), 'c-1a2b3c4d'),
        '/k',
      ),
    ) as { clusters: Array<{ name: string; cluster: { server: string } }>; 'current-context': string }
    expect(both.clusters.map((c) => [c.name, c.cluster.server])).to.deep.equal([
      ['c', 'https://10.0.0.9:6443'],
      ['c-1a2b3c4d', 'https://10.0.0.1:6443'],
    ])
    expect(both['current-context']).to.equal('c-1a2b3c4d')
  })

  it('the node logs: 0600 whatever mode the file had, never through a symlink', async () => {
    await withTempDir(async (dir) => {
      const log = path.join(dir, 'constellation-cluster.log')
      await writeFile(log, 'before\n')
      await chmod(log, 0o644)
      await appendClusterLog(log, Buffer.from('node log\n'))
      expect((await stat(log)).mode & 0o777).to.equal(0o600)
      expect(await readFile(log, 'utf8')).to.equal('before\nnode log\n')
      const victim = path.join(dir, 'victim')
      await writeFile(victim, 'mine\n')
      const linked = path.join(dir, 'linked.log')
      await symlink(victim, linked)
      await expect(appendClusterLog(linked, Buffer.from('x'))).to.be.rejectedWith(/is a symbolic link/)
      expect(await readFile(victim, 'utf8')).to.equal('mine\n')
    })
  })

  it('when no file takes the kubeconfig after the node answered, it is printed, and the error says what happened', async () => {
    await withTempDir(async (dir) => {
      const paths = workspacePaths(dir)
      const printed: string[] = []
      const err = await saveInitResult(savedAnswer(paths), {
        writeExclusive: (file) => Promise.reject(new Error(`EACCES: permission denied, open '${file}'`)),
        now: () => new Date('2026-01-02T03:04:05.678Z'),
        printLastResort: (text) => void printed.push(text),
      }).catch((e: unknown) => e)
      expect(printed).to.deep.equal(['KUBECONFIG'])
      expect(err).to.be.instanceOf(CliError)
      expect((err as CliError).message).to.equal(
        `the node initialized cluster ${'ab'.repeat(32)}, but saving its results failed`,
      )
      expect((err as CliError).hint)
        .to.include(`${paths.adminConf}.2026-01-02T03-04-05-678Z (EACCES`)
        .and.include('printed to stdout')
        .and.include(`${paths.state} records the cluster`)
        .and.not.include('nothing was changed')
      expect(await readFile(paths.state, 'utf8')).to.include(`clusterID: ${'ab'.repeat(32)}`)
    })
  })

  it('when the state cannot record the cluster, the kubeconfig is written all the same and the error says how to record it', () =>
    withTempDir(async (dir) => {
      const paths = workspacePaths(dir)
      const err = await saveInitResult(savedAnswer(paths), {
        recordState: (file) => Promise.reject(new Error(`ENOSPC: no space left on device, open '${file}'`)),
        now: () => new Date(),
        printLastResort: () => expect.fail('the kubeconfig had a file'),
      }).catch((e: unknown) => e)
      expect(await readFile(paths.adminConf, 'utf8')).to.equal('KUBECONFIG')
      expect((await stat(paths.adminConf)).mode & 0o777).to.equal(0o600)
      expect(err).to.be.instanceOf(CliError)
      expect((err as CliError).hint)
        .to.include(`${paths.state} does not record the cluster (ENOSPC`)
        .and.include(`clusterValues.clusterID: ${'ab'.repeat(32)}`)
        .and.include(`keep ${paths.masterSecret}`)
    }))

  it("the measurement salt: an earlier run's only with its master secret; recorded in the state before anything is sent", () =>
    withTempDir(async (dir) => {
      const state = defaultState('c', '10.0.0.5', (n) => Buffer.alloc(n, 0x41), Buffer.alloc(32, 0x41))
      const fresh = (n: number) => Buffer.alloc(n, 0x66)
      expect(chooseMeasurementSalt(state, 'reused', fresh)).to.deep.equal({
        salt: fresh(32),
        recorded: false,
      })
      const file = path.join(dir, 'constellation-state.yaml')
      const recorded = await recordMeasurementSalt(file, state, Buffer.alloc(32, 0x77))
      expect((await stat(file)).mode & 0o777).to.equal(0o600)
      const loaded = await loadState(file)
      expect(loaded).to.deep.equal(recorded)
      expect(loaded.clusterValues).to.deep.equal({
        clusterID: '',
        ownerID: '',
        measurementSalt: '77'.repeat(32),
      })
      expect(chooseMeasurementSalt(loaded, 'reused', fresh)).to.deep.equal({
        salt: Buffer.alloc(32, 0x77),
        recorded: true,
      })
      // a new master secret never goes with an old salt: another cluster ID, another node
      expect(chooseMeasurementSalt(loaded, 'generated', fresh)).to.deep.equal({
        salt: fresh(32),
        recorded: false,
      })
    }))

  it('what a Ctrl-C says, by how far init got', () => {
    const facts = {
      secretOnDisk: true,
      masterSecret: '/ws/ms.json',
      address: '10.0.0.5:9000',
      workspace: 'ws',
    }
    expect(interruptedLine('preparing', facts))
      .to.include('nothing was sent')
      .and.include('/ws/ms.json can be reused')
    expect(interruptedLine('sent', facts))
      .to.include('the node may be initialized')
      .and.include('/ws/ms.json (keep it)')
      .and.include('`constellation init -C ws` again: it resumes')
      .and.not.include('nothing was sent')
    expect(interruptedLine('resuming', facts))
      .to.include('the node keeps the answer')
      .and.include('`constellation init -C ws` again to resume')
  })
})
