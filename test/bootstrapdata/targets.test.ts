import path from 'node:path'
import { expect } from '../support/chai.js'
import { outputTargets } from '../../src/lib/bootstrapdata/targets.js'
import type { OutputFormat } from '../../src/lib/bootstrapdata/types.js'
import { tempWorkspace } from './helpers.js'

const machine = (name: string, format: OutputFormat) => ({
  machine: { metadata: { name } },
  format,
  extra: name,
})

const cases: Record<
  string,
  { output: string; machines: ReturnType<typeof machine>[]; wantDir: string; wantFiles: string[] }
> = {
  'one machine and a file path: that file, whatever the format': {
    output: 'out/cp-0.json',
    machines: [machine('cp-0', 'ignition')],
    wantDir: 'out',
    wantFiles: ['out/cp-0.json'],
  },
  'a directory: one file per machine, named by machine and format': {
    output: 'out/',
    machines: [machine('cp-0', 'attested-ignition'), machine('w-0', 'cloud-config')],
    wantDir: 'out',
    wantFiles: ['out/cp-0.ign', 'out/w-0.cloud-config'],
  },
  'a new path for several machines is a directory': {
    output: 'new',
    machines: [machine('a', 'attested-cloud-config'), machine('b', 'ignition')],
    wantDir: 'new',
    wantFiles: ['new/a.cloud-config', 'new/b.ign'],
  },
}

describe('output targets: each machine keeps its own fields and gains its file', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const ws = await tempWorkspace(false)
      try {
        const at = (p: string) => path.join(ws.dir, p)
        const got = await outputTargets(
          tc.output.endsWith('/') ? `${at(tc.output)}/` : at(tc.output),
          tc.machines,
        )
        expect(got.dir).to.equal(at(tc.wantDir))
        expect(got.placed).to.deep.equal(
          tc.machines.map((m, i) => ({ ...m, file: at(tc.wantFiles[i] ?? '') })),
        )
      } finally {
        await ws.cleanup()
      }
    })
  }
})
