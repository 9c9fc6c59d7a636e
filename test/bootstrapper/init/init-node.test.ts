import { expect } from '../../support/chai.js'
import { InitRequest } from '../../../src/gen/init.js'
import { NodeLock } from '../../../src/lib/bootstrapper/index.js'
import { clusterKmsUri, hashInitSecret } from '../../../src/lib/kms/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { makeTempDir } from '../../support/temp.js'
import { rekeyBesideKubeadm } from '../../support/rekey-beside-kubeadm.js'
import { initializeNode, InitSecretError } from '../../../src/lib/bootstrapper/init/init-node.js'
import { silentLogger } from '../../../src/lib/system/logger.js'

const secret = Buffer.from('init-secret-0123456789abcdef0123')
const hash = await hashInitSecret(secret, 4)
const good = () =>
  InitRequest.fromPartial({
    kmsUri: clusterKmsUri({ key: Buffer.alloc(32, 1), salt: Buffer.alloc(32, 2) }),
    storageUri: 'storage://no-store',
    measurementSalt: Buffer.alloc(32, 3),
    kubernetesVersion: 'v1.31.13',
    initSecret: secret,
  })

describe('initializeNode refuses bad requests before touching anything', () => {
  const cases: Record<string, { req: InitRequest; want: RegExp; type?: new () => Error }> = {
    'wrong init secret': {
      req: { ...good(), initSecret: Buffer.from('nope') },
      want: /invalid init secret/,
      type: InitSecretError,
    },
    'KMS URI of another backend': {
      req: { ...good(), kmsUri: 'kms://aws?key=AA&salt=AA' },
      want: /bad KMS URI/,
    },
    'short measurement salt': {
      req: { ...good(), measurementSalt: Buffer.alloc(8) },
      want: /measurement salt is 8 bytes, want 32/,
    },
    'version without patch': {
      req: { ...good(), kubernetesVersion: 'v1.31' },
      want: /kubernetes version "v1.31" is not vMAJOR.MINOR.PATCH/,
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const spyCalls: string[] = []
      const deps = {
        initSecretHash: hash,
        nodeLock: new NodeLock({ extendPcr: () => Promise.resolve(void spyCalls.push('extendPcr')) }),
        onLocked: () => void spyCalls.push('onLocked'),
        disk: {
          uuid: () => {
            spyCalls.push('uuid')
            return Promise.resolve('00000000-0000-0000-0000-000000000000')
          },
          changeKey: () => Promise.resolve(void spyCalls.push('changeKey')),
          writeMark: () => Promise.resolve(void spyCalls.push('writeMark')),
        },
        paths: nodePaths('/nonexistent-root'),
        self: { name: 'n', role: 'control-plane' as const, vpcIP: '10.0.0.1' },
        stageComponents: () => {
          spyCalls.push('stageComponents')
          return Promise.resolve({ install: () => Promise.resolve(), discard: () => Promise.resolve() })
        },
        kubeadmInit: () => {
          spyCalls.push('kubeadm')
          return Promise.resolve(Buffer.from('kubeconfig'))
        },
        log: silentLogger,
      }
      const err = await initializeNode(tc.req, deps).catch((e: unknown) => e)
      expect(String(err instanceof Error ? err.message + ': ' + String(err.cause) : err)).to.match(tc.want)
      if (tc.type) expect(err).to.be.instanceOf(tc.type)
      expect(spyCalls).to.deep.equal([])
      expect(deps.nodeLock.isLocked).to.equal(false)
    })
  }
})

describe('initializeNode: components are fetched and verified before the node lock; only kubeadm may fail after it', () => {
  // 'kubeadm' is recorded when kubeadm finishes: a run that was stopped is recorded apart
  const cases: Record<
    string,
    { failing?: 'stage' | 'uuid' | 'changeKey'; want?: RegExp; wantEvents: string[]; locked: boolean }
  > = {
    'both succeed: the disk is read while components are staged, then lock, re-key + install, kubeadm': {
      wantEvents: ['uuid', 'stage', 'lock', 'changeKey', 'install', 'mark', 'discard', 'kubeadm'],
      locked: true,
    },
    'the download fails: refused before the lock, nothing re-keyed or installed': {
      failing: 'stage',
      want: /^the Kubernetes components cannot be installed; nothing was changed on the node: Error: HTTP 503$/,
      wantEvents: ['uuid', 'stage'],
      locked: false,
    },
    'the disk cannot be read: the staged components are discarded, no lock': {
      failing: 'uuid',
      want: /^the state disk cannot be read; nothing was changed on the node/,
      wantEvents: ['uuid', 'stage', 'discard'],
      locked: false,
    },
    're-keying fails after the lock: kubeadm never finishes, staging is discarded': {
      failing: 'changeKey',
      want: /^setting the state disk key: Error: cryptsetup exited 2$/,
      wantEvents: ['uuid', 'stage', 'lock', 'changeKey', 'install', 'discard'],
      locked: true,
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const events: string[] = []
        const step = (event: string, error?: string) => () => {
          events.push(event)
          return error ? Promise.reject(new Error(error)) : Promise.resolve()
        }
        const deps = {
          initSecretHash: hash,
          nodeLock: new NodeLock({ extendPcr: step('lock') }),
          onLocked: () => {},
          disk: {
            uuid: () =>
              step('uuid', tc.failing === 'uuid' ? 'luksUUID exited 1' : undefined)().then(
                () => '0A1B2C3D-0000-0000-0000-000000000000',
              ),
            changeKey: step('changeKey', tc.failing === 'changeKey' ? 'cryptsetup exited 2' : undefined),
            writeMark: step('mark'),
          },
          paths: nodePaths(dir),
          self: { name: 'n', role: 'control-plane' as const, vpcIP: '10.0.0.1' },
          stageComponents: () =>
            step('stage', tc.failing === 'stage' ? 'HTTP 503' : undefined)().then(() => ({
              install: step('install'),
              discard: step('discard'),
            })),
          kubeadmInit: (_input: unknown, signal: AbortSignal) =>
            new Promise<Buffer>((resolve, reject) => {
              const done = setImmediate(() => {
                events.push('kubeadm')
                resolve(Buffer.from('kubeconfig'))
              })
              signal.addEventListener('abort', () => {
                clearImmediate(done)
                reject(new Error('stopped'))
              })
            }),
          log: silentLogger,
        }
        const err = await initializeNode(good(), deps).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(events).to.deep.equal(tc.wantEvents)
        expect(deps.nodeLock.isLocked).to.equal(tc.locked)
        if (tc.want) {
          expect(err).to.be.instanceOf(Error)
          const e = err as Error
          expect(`${e.message}: ${String(e.cause)}`).to.match(tc.want)
        } else expect(err).to.equal(undefined)
      } finally {
        await cleanup()
      }
    })
  }
})

describe('initializeNode: the state disk is re-keyed while kubeadm runs', () => {
  /** Deps whose re-key waits for kubeadm to start: the run deadlocks if the two run one after the other. */
  function overlapping(dir: string, rekey: 'succeeds' | 'fails') {
    const { seen, disk, kubeadm } = rekeyBesideKubeadm(rekey, Buffer.from('kubeconfig'))
    return {
      seen,
      deps: {
        initSecretHash: hash,
        nodeLock: new NodeLock({ extendPcr: () => Promise.resolve() }),
        onLocked: () => {},
        disk,
        paths: nodePaths(dir),
        self: { name: 'n', role: 'control-plane' as const, vpcIP: '10.0.0.1' },
        stageComponents: () =>
          Promise.resolve({ install: () => Promise.resolve(), discard: () => Promise.resolve() }),
        kubeadmInit: kubeadm,
        log: silentLogger,
      },
    }
  }

  it('both finish: the node is initialized once the disk carries its key and mark', async () => {
    const { dir, cleanup } = await makeTempDir()
    try {
      const { deps, seen } = overlapping(dir, 'succeeds')
      const result = await initializeNode(good(), deps)
      expect(result.kubeconfig.toString()).to.equal('kubeconfig')
      expect(seen).to.deep.equal({ kubeadmStopped: false, kubeadmFinished: true, marked: true })
    } finally {
      await cleanup()
    }
  })

  it('the re-key fails while kubeadm runs: kubeadm is stopped and the disk is named as the cause', async () => {
    const { dir, cleanup } = await makeTempDir()
    try {
      const { deps, seen } = overlapping(dir, 'fails')
      const err = await initializeNode(good(), deps).then(
        () => undefined,
        (e: unknown) => e as Error,
      )
      expect(`${err?.message}: ${String(err?.cause)}`).to.equal(
        'setting the state disk key: Error: cryptsetup exited 2',
      )
      expect(seen).to.deep.equal({ kubeadmStopped: true, kubeadmFinished: false, marked: false })
    } finally {
      await cleanup()
    }
  })
})

describe('initializeNode: the control-plane endpoint kubeadm init gets', () => {
  const cases: Record<string, { loadBalancerEndpoint?: string; want: string }> = {
    'no load balancer: the node itself': { want: '10.0.0.1' },
    'a load balancer on 6443': { loadBalancerEndpoint: '10.0.0.100:6443', want: '10.0.0.100:6443' },
    'a load balancer on another port: joins dial that port, so init must too': {
      loadBalancerEndpoint: 'api.example:443',
      want: 'api.example:443',
    },
    'IPv6 with a port': { loadBalancerEndpoint: '[fd00::100]:443', want: '[fd00::100]:443' },
    'a bare host: kubeadm picks 6443': { loadBalancerEndpoint: 'api.example', want: 'api.example' },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        let endpoint = ''
        await initializeNode(good(), {
          initSecretHash: hash,
          nodeLock: new NodeLock({ extendPcr: () => Promise.resolve() }),
          onLocked: () => {},
          disk: {
            uuid: () => Promise.resolve('0A1B2C3D-0000-0000-0000-000000000000'),
            changeKey: () => Promise.resolve(),
            writeMark: () => Promise.resolve(),
          },
          paths: nodePaths(dir),
          self: { name: 'n', role: 'control-plane' as const, vpcIP: '10.0.0.1' },
          loadBalancerEndpoint: tc.loadBalancerEndpoint,
          stageComponents: () =>
            Promise.resolve({ install: () => Promise.resolve(), discard: () => Promise.resolve() }),
          kubeadmInit: (input) => {
            endpoint = input.controlPlaneEndpoint
            return Promise.resolve(Buffer.from('kubeconfig'))
          },
          log: silentLogger,
        })
        expect(endpoint).to.equal(tc.want)
      } finally {
        await cleanup()
      }
    })
  }
})
