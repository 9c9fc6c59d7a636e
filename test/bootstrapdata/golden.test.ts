import { readFile, readdir } from 'node:fs/promises'
import path from 'node:path'
import { expect } from '../support/chai.js'
import { generateBootstrapData, type OutputFormat } from '../../src/lib/bootstrapdata/index.js'
import {
  FIXTURES,
  fixtureText,
  golden,
  goldenIgnition,
  tempWorkspace,
  testDeps,
  testOptions,
  validateUserData,
} from './helpers.js'
import { compactIgnition, readableIgnition } from './readable-ignition.js'

interface Case {
  machine: string
  format: OutputFormat
  ready?: boolean
  input?: string
  role: string
}

const cases: Record<string, Case> = {
  'control-plane-init.cloud-config': { machine: 'cp-0', format: 'cloud-config', role: 'init' },
  'control-plane-init.ign': { machine: 'cp-0', format: 'ignition', role: 'init' },
  'control-plane-join.cloud-config': {
    machine: 'cp-1',
    format: 'cloud-config',
    ready: true,
    role: 'control-plane-join',
  },
  'control-plane-join.ign': { machine: 'cp-1', format: 'ignition', ready: true, role: 'control-plane-join' },
  'worker-join.cloud-config': {
    machine: 'worker-0',
    format: 'cloud-config',
    ready: true,
    role: 'worker-join',
  },
  'worker-join.ign': { machine: 'worker-0', format: 'ignition', ready: true, role: 'worker-join' },
  'attested-control-plane.cloud-config': {
    machine: 'cp-0',
    format: 'attested-cloud-config',
    input: 'attested.yaml',
    role: 'init',
  },
  'attested-control-plane.ign': {
    machine: 'cp-0',
    format: 'attested-ignition',
    input: 'attested.yaml',
    role: 'init',
  },
  'attested-worker.cloud-config': {
    machine: 'worker-0',
    format: 'attested-cloud-config',
    input: 'attested.yaml',
    role: 'worker-join',
  },
  'attested-worker.ign': {
    machine: 'worker-0',
    format: 'attested-ignition',
    input: 'attested.yaml',
    role: 'worker-join',
  },
}

describe('bootstrap data documents (golden files, real validators)', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const ws = await tempWorkspace()
      try {
        const input = tc.input
          ? await readFile(path.join(FIXTURES, tc.input), 'utf8')
          : await fixtureText(tc.ready)
        const result = await generateBootstrapData(
          testOptions(ws.dir, { machine: tc.machine, format: tc.format }),
          await testDeps(input),
        )
        expect(result.machines.map((m) => [m.machine, m.role])).to.deep.equal([[tc.machine, tc.role]])
        const got = await readFile(result.machines[0]?.file as string, 'utf8')
        expect(result.machines[0]?.bytes).to.equal(Buffer.byteLength(got))
        if (tc.format.endsWith('ignition')) {
          const want = await goldenIgnition(name, got)
          expect(readableIgnition(got)).to.equal(want)
          expect(compactIgnition(want)).to.equal(got)
        } else {
          expect(got).to.equal(await golden(name, got))
        }
        await validateUserData(got)
      } finally {
        await ws.cleanup()
      }
    })
  }

  it('writes the token Secret manifest (0600) beside join data, and the same token into the kubeadm config', async () => {
    const ws = await tempWorkspace()
    try {
      const result = await generateBootstrapData(
        testOptions(ws.dir, { machine: 'worker-0' }),
        await testDeps(await fixtureText(true)),
      )
      const file = result.tokenSecret?.file as string
      const manifest = await readFile(file, 'utf8')
      expect(manifest).to.equal(await golden('bootstrap-token-secret.yaml', manifest))
      const token = /token-id: (\w+)[\s\S]*token-secret: (\w+)/.exec(manifest)
      const data = await readFile(result.machines[0]?.file as string, 'utf8')
      expect(data).to.contain(`token: ${token?.[1]}.${token?.[2]}`)
      expect((await import('node:fs')).statSync(file).mode & 0o777).to.equal(0o600)
      expect(await readdir(path.dirname(file))).to.have.members([
        'worker-0.cloud-config',
        path.basename(file),
      ])
    } finally {
      await ws.cleanup()
    }
  })
})
