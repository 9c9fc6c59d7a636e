import { expect } from '../support/chai.js'
import { InitRequest } from '../../src/gen/init.js'
import { initializeNode, InitSecretError, NodeLock } from '../../src/lib/bootstrapper/index.js'
import { clusterKmsUri, hashInitSecret } from '../../src/lib/kms/index.js'
import { nodePaths } from '../../src/lib/paths.js'
import { silentLogger } from '../../src/lib/system/index.js'
import { makeTempDir } from '../support/cli.js'

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
        },
        initialKeyFile: '/nonexistent',
        paths: nodePaths('/nonexistent-root'),
        self: { name: 'n', role: 'control-plane' as const, vpcIP: '10.0.0.1' },
        install: () => Promise.resolve(void spyCalls.push('install')),
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

describe('initializeNode prepares the state disk and the components side by side', () => {
  const cases: Record<string, { failing?: 'changeKey' | 'install'; want?: RegExp }> = {
    'both succeed: kubeadm runs after both': {},
    'the download fails: the disk is still re-keyed, kubeadm never runs': {
      failing: 'install',
      want: /^installing Kubernetes components: Error: HTTP 503$/,
    },
    're-keying fails: the download still finishes, kubeadm never runs': {
      failing: 'changeKey',
      want: /^setting the state disk key: Error: cryptsetup exited 2$/,
    },
  }
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const { dir, cleanup } = await makeTempDir()
      try {
        const events: string[] = []
        // Each step finishes a tick later, so the order shows whether they overlapped.
        const step = (start: string, end: string, error?: string) => async () => {
          events.push(start)
          await new Promise((r) => setTimeout(r, 5))
          events.push(end)
          if (error) throw new Error(error)
        }
        const deps = {
          initSecretHash: hash,
          nodeLock: new NodeLock({ extendPcr: () => Promise.resolve() }),
          onLocked: () => {},
          disk: {
            uuid: () => Promise.resolve('0A1B2C3D-0000-0000-0000-000000000000'),
            changeKey: step(
              'changeKey',
              'changeKey done',
              tc.failing === 'changeKey' ? 'cryptsetup exited 2' : undefined,
            ),
          },
          initialKeyFile: '/nonexistent',
          paths: nodePaths(dir),
          self: { name: 'n', role: 'control-plane' as const, vpcIP: '10.0.0.1' },
          install: step('install', 'install done', tc.failing === 'install' ? 'HTTP 503' : undefined),
          kubeadmInit: () => {
            events.push('kubeadm')
            return Promise.resolve(Buffer.from('kubeconfig'))
          },
          log: silentLogger,
        }
        const err = await initializeNode(good(), deps).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(events.slice(0, 2).sort()).to.deep.equal(['changeKey', 'install'])
        expect(events).to.include.members(['changeKey done', 'install done'])
        if (tc.want) {
          expect(err).to.be.instanceOf(Error)
          const e = err as Error
          expect(`${e.message}: ${String(e.cause)}`).to.match(tc.want)
          expect(events).not.to.include('kubeadm')
        } else {
          expect(err).to.equal(undefined)
          expect(events.at(-1)).to.equal('kubeadm')
        }
      } finally {
        await cleanup()
      }
    })
  }
})
