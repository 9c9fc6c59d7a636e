/**
 * kubeadm join: the JoinConfiguration per version and role, and the runner's attempts with a stub
 * kubeadm (what it ran, with which file, how often, what it logged).
 */
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { parse } from 'yaml'
import { expect } from '../../support/chai.js'
import { makeTempDir } from '../../support/temp.js'
import { runKubeadmJoin } from '../../../src/lib/bootstrapper/index.js'
import { chainMessage } from '../../../src/lib/errors/index.js'
import { nodePaths } from '../../../src/lib/paths.js'
import { CommandFailedError, createLogger, type Runner } from '../../../src/lib/system/index.js'
import {
  renderKubeadmJoinConfig,
  type KubeadmJoinInput,
} from '../../../src/lib/bootstrapper/kubeadm/kubeadm-join-config.js'

const TOKEN = 'abcdef.0123456789abcdef'
const CA_HASH = `sha256:${'ab'.repeat(32)}`
const input = (controlPlane: boolean): KubeadmJoinInput => ({
  nodeName: 'node-1',
  nodeIP: '10.0.0.5',
  apiServerEndpoint: '10.0.0.100:6443',
  token: TOKEN,
  caCertHash: CA_HASH,
  controlPlane,
})
const PATHS = { caCertPath: '/r/etc/kubernetes/pki/ca.crt', patchesDir: '/r/opt/kubernetes/patches' }

describe('kubeadm join', () => {
  describe('JoinConfiguration per version and role', () => {
    const cases: Record<string, { version: string; controlPlane: boolean; want: Record<string, unknown> }> = {
      'worker on 1.31: v1beta4, kubelet args as a list, no controlPlane': {
        version: 'v1.31.13',
        controlPlane: false,
        want: {
          apiVersion: 'kubeadm.k8s.io/v1beta4',
          kind: 'JoinConfiguration',
          caCertPath: PATHS.caCertPath,
          nodeRegistration: {
            name: 'node-1',
            criSocket: 'unix:///run/containerd/containerd.sock',
            kubeletExtraArgs: [{ name: 'node-ip', value: '10.0.0.5' }],
          },
          discovery: {
            bootstrapToken: { apiServerEndpoint: '10.0.0.100:6443', token: TOKEN, caCertHashes: [CA_HASH] },
          },
          patches: { directory: PATHS.patchesDir },
        },
      },
      'control plane on 1.30: v1beta3, kubelet args as a map, local API endpoint, no download-certs': {
        version: 'v1.30.14',
        controlPlane: true,
        want: {
          apiVersion: 'kubeadm.k8s.io/v1beta3',
          kind: 'JoinConfiguration',
          caCertPath: PATHS.caCertPath,
          nodeRegistration: {
            name: 'node-1',
            criSocket: 'unix:///run/containerd/containerd.sock',
            kubeletExtraArgs: { 'node-ip': '10.0.0.5' },
          },
          discovery: {
            bootstrapToken: { apiServerEndpoint: '10.0.0.100:6443', token: TOKEN, caCertHashes: [CA_HASH] },
          },
          patches: { directory: PATHS.patchesDir },
          controlPlane: { localAPIEndpoint: { advertiseAddress: '10.0.0.5', bindPort: 6443 } },
          skipPhases: ['control-plane-prepare/download-certs'],
        },
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, () => {
        const yaml = renderKubeadmJoinConfig({
          ...input(tc.controlPlane),
          kubernetesVersion: tc.version,
          paths: PATHS,
        })
        expect(parse(yaml)).to.deep.equal(tc.want)
      })
  })

  describe('runKubeadmJoin with a stub kubeadm', () => {
    let root: string
    let cleanup: () => Promise<void>
    beforeEach(async () => ({ dir: root, cleanup } = await makeTempDir()))
    afterEach(() => cleanup())

    /** kubeadm that prints its version and fails `join` the first `failures` times. */
    function stubKubeadm(failures: number) {
      const argv: string[][] = []
      const configs: { text: string; mode: number }[] = []
      const runner: Runner = {
        async run(_file, args) {
          argv.push([...args])
          if (args[0] === 'version') return { stdout: 'v1.31.13\n', stderr: '' }
          const file = args[args.indexOf('--config') + 1] ?? ''
          configs.push({ text: await readFile(file, 'utf8'), mode: (await stat(file)).mode & 0o777 })
          if (argv.filter((a) => a[0] === 'join').length <= failures)
            throw new CommandFailedError({
              command: 'kubeadm',
              args,
              exitCode: 1,
              stdout: `[preflight] Running pre-flight checks with token ${TOKEN}\n`,
              stderr: `error execution phase kubelet-start: timed out (token ${TOKEN})`,
              timedOut: false,
            })
          return { stdout: 'This node has joined the cluster\n', stderr: '' }
        },
      }
      return { runner, argv, configs }
    }

    it('warns when the installed kubeadm is of another minor than the ticket says the cluster runs', async () => {
      const paths = nodePaths(root)
      const run = async (clusterVersion: string) => {
        const k = stubKubeadm(0)
        const lines: string[] = []
        await runKubeadmJoin(
          { ...input(false), clusterVersion },
          {
            runner: k.runner,
            kubeadm: '/stub/kubeadm',
            paths,
            recordOutput: () => {},
            log: createLogger({ format: 'json', write: (l) => lines.push(l) }),
            retryDelayMs: 1,
          },
        )
        expect(k.argv.filter((a) => a[0] === 'join')).to.have.length(1)
        return lines.filter((l) => l.includes('"level":"warn"'))
      }
      expect(await run('v1.31.12'), 'same minor').to.deep.equal([])
      const warned = await run('v1.32.9')
      expect(warned).to.have.length(1)
      expect(warned[0]).to.match(
        /The join ticket says the cluster runs Kubernetes v1\.32\.9, but the components it carries installed kubeadm v1\.31\.13/,
      )
    })

    const cases: Record<string, { failures: number; wantJoins: number; wantError?: RegExp }> = {
      'joins at the first attempt': { failures: 0, wantJoins: 1 },
      'joins at the third attempt': { failures: 2, wantJoins: 3 },
      'gives up after three attempts, with kubeadm’s reason, redacted': {
        failures: 3,
        wantJoins: 3,
        wantError:
          /^kubeadm join failed \(at most 3 attempts within 300 s\): kubeadm join -v=5 --config \S+ exited with code 1: error execution phase kubelet-start: timed out \(token \[redacted\]\)$/,
      },
    }
    for (const [name, tc] of Object.entries(cases))
      it(name, async () => {
        const kubeadm = stubKubeadm(tc.failures)
        const lines: string[] = []
        const recorded: string[] = []
        const paths = nodePaths(root)
        const run = runKubeadmJoin(input(false), {
          runner: kubeadm.runner,
          kubeadm: '/stub/kubeadm',
          paths,
          recordOutput: (t) => recorded.push(t),
          log: createLogger({ format: 'json', write: (l) => lines.push(l) }),
          retryDelayMs: 1,
        })
        if (tc.wantError) {
          const err = (await run.catch((e: unknown) => e)) as Error
          expect(chainMessage(err)).to.match(tc.wantError)
        } else await run
        expect(kubeadm.argv[0]).to.deep.equal(['version', '-o', 'short'])
        const joins = kubeadm.argv.slice(1)
        expect(joins).to.have.length(tc.wantJoins)
        for (const argv of joins) {
          expect(argv.slice(0, 3)).to.deep.equal(['join', '-v=5', '--config'])
          expect(argv.join(' '), 'the token stays out of argv').not.to.include(TOKEN)
        }
        for (const config of kubeadm.configs) {
          expect(config.mode).to.equal(0o600)
          expect(config.text).to.include(TOKEN)
        }
        const configFile = joins[0]?.[3] ?? ''
        expect(path.dirname(path.dirname(configFile))).to.equal(paths.runtimeDir)
        await expect(stat(configFile), 'the config is removed afterwards').to.be.rejected
        const log = [...lines, ...recorded].join('\n')
        expect(log, 'no token in the node log').not.to.include(TOKEN)
        expect(lines.filter((l) => l.includes('kubeadm join failed; trying again'))).to.have.length(
          Math.min(tc.failures, 2),
        )
      })
  })
})
