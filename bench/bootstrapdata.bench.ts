/** bootstrap-data: rendering all machines of the fixture cluster, CA generation, and document sizes. */
import { randomBytes } from 'node:crypto'
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  generateBootstrapData,
  loadTemplates,
  type GenerateResult,
  type OutputFormat,
  DEFAULT_STATE_DISK,
} from '../src/lib/bootstrapdata/index.js'
import { loadOrCreateAuthorities } from '../src/lib/bootstrapdata/certs.js'
import { summarize, timeRuns } from './stats.js'

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures/bootstrapdata')
const RUNS = 20

export default async function bootstrapdata() {
  const templates = await loadTemplates()
  const text = await readFile(path.join(FIXTURES, 'cluster.yaml'), 'utf8')
  const ready = text.replace('control-plane-ready: "false"', 'control-plane-ready: "true"')
  const generate = async (input: string, format: OutputFormat): Promise<GenerateResult> => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-bench-bd-'))
    try {
      await cp(path.join(FIXTURES, 'pki'), path.join(dir, 'pki'), { recursive: true })
      return await generateBootstrapData(
        {
          inputFile: 'cluster.yaml',
          workspace: dir,
          format,
          output: `${dir}/out/`,
          caDir: `${dir}/pki`,
          maxUserDataBytes: 1 << 20,
          tokenTtlMs: 3_600_000,
          attestationVariant: 'qemu-vtpm',
          stateDisk: DEFAULT_STATE_DISK,
        },
        {
          now: () => new Date(),
          randomBytes,
          readInput: async () => input,
          templates,
          objectStore: () => {
            throw new Error('no upload in the bench')
          },
          registerToken: async () => undefined,
          initSecretHash: async () => {
            throw new Error('no attested format in the bench')
          },
        },
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  }
  const sizes: Record<string, number> = {}
  for (const format of ['cloud-config', 'ignition'] as const) {
    for (const m of (await generate(text, format)).machines) sizes[`${m.role}.${format}`] = m.bytes
    for (const m of (await generate(ready, format)).machines)
      sizes[`${m.machine}-${m.role}.${format}`] = m.bytes
  }
  const caDir = async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'constell-bench-ca-'))
    await loadOrCreateAuthorities(dir, { generate: true, now: new Date() })
    await rm(dir, { recursive: true, force: true })
  }
  return {
    threeMachinesCloudConfig: summarize(
      await timeRuns(RUNS, async () => void (await generate(ready, 'cloud-config'))),
    ),
    threeMachinesIgnition: summarize(
      await timeRuns(RUNS, async () => void (await generate(ready, 'ignition'))),
    ),
    caSetGeneration: summarize(await timeRuns(5, caDir)),
    userDataBytes: sizes,
  }
}
